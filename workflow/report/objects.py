"""The tidy table of one paper object: every cell of its grid made here (one row per model width) beside the
paper's printed value, then the numbers the paper cites from other work, never mixed with ours.

The comparison of a row (ours - paper with its 95% interval, the verdict, the status) is
:mod:`workflow.report.compare`'s; what the notebook prints of the table is :func:`show` of its
:func:`show_columns`. One notebook makes every object (:data:`OBJECT_NOTEBOOK`, run once per object).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dirdp import methods
from dirdp.data import missing_files
from dirdp.presets import get_preset
from dirdp.protocol import fmt_eps, parse_eps
from dirdp.run_result import read_run
from workflow import paper
from workflow.experiments import METHODS, PaperObject, Profile, get_object
from workflow.report import labels
from workflow.report.compare import _paper_cell, estimate, status

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
MODEL_NAMES = {"inception": "Inception", "resnet18": "ResNet-18", "resnet9": "ResNet-9", "papernot_cnn": "CNN"}
# origin, interval, verdict and status are keys (workflow.report.labels: what a reader sees of each); why: the free
# text of a cell not run here, shown as it is
COLUMNS = ["object", "dataset", "metric", "method", "model", "origin", "eps", "eps_reported", "q", "alpha", "lr",
           "width", "norm", "precision", "mean", "std", "n", "seeds", "paper", "paper_std", "diff", "ci_low", "ci_high",
           "interval", "interval_df", "verdict", "status", "why", "protocol", "setting", "certified_eps", "rstar", "source", "runs"]
SHOW_COLUMNS = ["method", "model", "origin", "eps", "eps_reported", "q", "alpha", "lr", "width", "mean", "std", "n",
                "paper", "paper_std", "diff", "ci_low", "ci_high", "status"]


def _model_name(method: str, preset_model: str) -> str:
    """What a table names the model of ``method``'s runs: its own (the Papernot CNN, LATENT's conv + FC) or the data
    set's (``preset_model``, already named)."""
    own = methods.spec(method).model
    return preset_model if own is None else MODEL_NAMES.get(own) or methods.spec(method).model_label or own


# The notebook of every paper object (papermill's parameter ``object_name`` names the object): what differs between
# objects (the columns printed, the figure's axis) is the object's (show_columns, workflow.report.plots.figure)
OBJECT_NOTEBOOK = "accuracy_vs_eps"


def show_columns(obj: PaperObject) -> list[str]:
    """What the notebook prints of an object's table: one row per cell of its grid (eps; Table 9: eps and q; Figure 2:
    alpha and gamma, and no paper column: the paper prints no numbers for it) and model width, ours beside the
    paper's (:func:`show` leaves out a column empty in every row: eps_reported only where a cited number is at
    another eps)."""
    if obj.axis == "lr":
        return ["method", "model", "origin", "eps", "alpha", "lr", "width", "mean", "std", "n", "status"]
    varies = ["eps_reported"] if obj.axis == "eps" else [obj.axis]
    return ["method", "model", "origin", "eps", *varies, "width", "mean", "std", "n", "paper", "paper_std", "diff",
            "ci_low", "ci_high", "status"]


def heading(obj: PaperObject) -> str:
    """The object's title, with the paper figures that draw it, and its caption: "Table 4 and Figure 3a: Test ..."."""
    figures = [f"Figure {stem.split('_')[0].removeprefix('fig')}" for stem in obj.figures]  # fig3a_fashionmnist
    return f"{' and '.join([obj.title, *figures])}: {obj.caption}"


def describe(obj: PaperObject) -> str:
    """:func:`heading`, then what the paper's grid of the object runs: data set, model, metric, eps, optimizer, the
    baselines run here beside Algorithm 1, and whose printed values it is compared with."""
    grid = f"eps {', '.join(fmt_eps(e) for e in obj.eps)}" + (f", optimizer {obj.optimizer}" if obj.optimizer else "")
    lines = [heading(obj), f"{obj.dataset} ({MODEL_NAMES[get_preset(obj.dataset).model]}), {obj.metric} accuracy; "
             f"the paper's grid: {grid}, {obj.seeds} seeds"]
    lines += [f"run here beside it: {METHODS[m]} at eps {', '.join(fmt_eps(e) for e in eps)}" for m, eps in obj.baselines]
    if obj.paper_object:
        lines.append(f"compared with the values the paper prints in {get_object(obj.paper_object).title}")
    return "\n".join(lines)


def _keys(obj: PaperObject) -> list[str]:
    return {"eps": ["method", "eps"], "q": ["method", "eps", "q"], "lr": ["method", "eps", "alpha", "lr"]}[obj.axis]


def _shown_profiles(profile: Profile) -> list[Profile]:
    """The profiles whose runs ``profile``'s tables also show (its ``also_show``: e.g. the gpu profile's
    full-width runs beside the cpu profile's reduced-width ones). They are read, never trained."""
    out = []
    for name in profile.config.get("also_show") or []:
        path = CONFIG_DIR / f"{name}.yaml"
        if not path.exists():
            raise ValueError(f"profile '{profile.name}' shows runs of '{name}', but {path} does not exist.")
        out.append(Profile.load(path))
    return out


def profile_run_paths(obj: PaperObject, profile: Profile, runs_root: str = "results/runs") -> list[str]:
    """Result files ``obj``'s table reads in ``profile``: its own runs, then those of its ``also_show``
    profiles (same object) that exist."""
    own = [r.path(profile.name, runs_root) for r in profile.runs(obj.name)]
    shown = [p for other in _shown_profiles(profile) for r in other.runs(obj.name)
             if Path(p := r.path(other.name, runs_root)).exists()]
    return own + shown


def object_table(obj: PaperObject, profile: Profile, *, runs_root: str = "results/runs") -> pd.DataFrame:
    """Tidy table of ``obj``: one row per cell and model width made here (or one per cell expected), beside
    the paper's value, then the paper's cited rows. Columns: :data:`COLUMNS` (``runs``: the profiles the runs
    come from)."""
    keys = _keys(obj)
    expected = profile.runs(obj.name)
    runs = pd.DataFrame([dict(read_run(p), profile=Path(p).parts[-3]) for p in profile_run_paths(obj, profile, runs_root)
                         if Path(p).exists()])
    printed = paper.accuracy(obj.paper_object or obj.name)
    mine = printed[printed.label == "paper"]
    model = MODEL_NAMES[get_preset(obj.dataset).model]

    # every cell of the grid: the profile's, or (when it trains none) the paper's own
    cells = {tuple(getattr(r, k) for k in keys) for r in expected}
    if obj.axis != "lr":  # the paper's own cells too, its DP-SGD baseline included
        key = {v: k for k, v in METHODS.items()}
        cells |= {(key[row.method], row.eps, row.q)[: len(keys)] for row in mine.itertuples()}
    else:  # Figure 2 prints no numbers: its cells are the paper's grid of (alpha, learning rate)
        cells |= {tuple(getattr(r, k) for k in keys) for r in obj.runs(seeds=1)}
    rows = []
    for cell in sorted(cells):
        sel = dict(zip(keys, cell))
        base = dict(object=obj.name, dataset=obj.dataset, metric=obj.metric, method=METHODS[sel["method"]],
                    model=_model_name(sel["method"], model),
                    eps=sel["eps"], q=sel.get("q"), alpha=sel.get("alpha"), lr=sel.get("lr"))
        ref = _paper_cell(mine, base)
        base.update(paper=ref[0], paper_std=ref[1], source=ref[2])
        got = runs
        for k, v in sel.items() if len(got) else ():
            got = got[got[k] == v] if k == "method" else got[np.isclose(got[k].astype(float), v)]
        got = got[got[obj.metric].notna()] if len(got) else got
        if not len(got):
            planned = any(tuple(getattr(r, k) for k in keys) == cell for r in expected)
            rows.append(dict(base, origin="paper" if ref[0] is not None else "not_run", n=0, status="not_run",
                             why=_not_run(obj, profile, planned)))
            continue
        # full width first, the paper's BatchNorm before GroupNorm (an option here: not the paper's model), fp32 before
        # bf16 (a precision is never pooled with another: their seeds are separate samples)
        for (width, norm, prec), at in sorted(got.groupby(["width", "norm", "precision"]),
                                              key=lambda g: (-g[0][0], g[0][1], g[0][2] != "fp32")):
            vals = at[obj.metric]
            first = at.iloc[0]
            other_norm = norm == "group" and methods.norm_chosen(sel["method"])
            row = dict(base, origin="here", width=width, norm=norm, precision=prec, mean=float(vals.mean()),
                       std=float(vals.std(ddof=1)) if len(vals) > 1 else None, n=len(vals),
                       seeds=" ".join(str(s) for s in sorted(at.seed)), protocol=first.protocol,
                       setting=f"{first.protocol}, {first.width_label}" + (", GroupNorm" if other_norm else "")
                       + (", bf16" if prec == "bf16" else ""),
                       certified_eps=at.certified_eps.max(), rstar=first.rstar,
                       runs=" ".join(sorted(set(at.profile))))
            reduced_protocol = not first.paper_protocol
            if reduced_protocol:  # ours - paper, but no interval or verdict: not the paper's experiment
                row["diff"] = None if ref[0] is None else round(row["mean"] - ref[0], 3)
            else:
                row.update(estimate(row["mean"], row["std"], row["n"], ref[0], ref[1]))
            row["status"] = status(row, reduced_protocol)
            rows.append(row)
    for c in printed[printed.label == "paper, cited"].itertuples():
        rows.append(dict(object=obj.name, dataset=obj.dataset, metric=obj.metric, method=c.method, model=c.model,
                         origin="cited", eps=c.eps, eps_reported=c.eps_reported, q=None, paper=c.accuracy,
                         paper_std=c.std if not pd.isna(c.std) else None, n=0, source=c.source, status="cited"))
    return pd.DataFrame(rows).reindex(columns=COLUMNS)


def paper_model(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of an object table made with the paper's own models: without Algorithm 1's GroupNorm rows
    (``--norm group``, an option here), which figures and summaries that compare with the paper leave out."""
    return table[~(table.method.map(methods.norm_chosen).astype(bool) & (table.norm == "group"))]


def _not_run(obj: PaperObject, profile: Profile, planned: bool) -> str:
    """Why a cell of ``obj`` is not run here (the ``why`` of its row: shown as it is, never read back)."""
    if obj.name not in profile.objects:
        offline = "; its data set is not on this machine" if missing_files(obj.dataset) else ""
        return f"not in the '{profile.name}' profile{offline}"
    if obj.dataset not in profile.datasets:
        return "data set left out of this DAG"
    if not planned:
        return f"not in the '{profile.name}' profile's grid"
    return "result file missing: run the DAG"


def show(table: pd.DataFrame, columns: list[str] | None = None) -> str:
    """``columns`` of the table (default :data:`SHOW_COLUMNS`) as text, for a notebook cell or a log; columns
    empty in every row are left out, eps is printed as :func:`dirdp.protocol.fmt_eps` prints it."""
    t = labels.readable(table)
    t = t[[c for c in columns or SHOW_COLUMNS if table[c].notna().any()]].copy()
    for c in ("mean", "std"):  # unrounded in the table, so that a page printing 2 decimals rounds once; 3 here
        if c in t:
            t[c] = t[c].map(lambda v: v if pd.isna(v) else round(float(v), 3))
    for c in ("eps", "eps_reported"):
        if c in t:
            t[c] = t[c].map(lambda v: "" if pd.isna(v) else fmt_eps(parse_eps(v)))
    for c in t.columns[t.isna().any()]:  # an empty cell prints blank (the column becomes text, as fillna made it)
        t[c] = t[c].astype(object).where(t[c].notna(), "")
    return t.to_string(index=False)
