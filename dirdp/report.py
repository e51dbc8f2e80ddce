"""Runs made here beside the paper's printed values: one tidy table and one figure per paper object.

A cell made here is the mean over its seeds (std with ddof = 1 when n >= 2), one row per model width.
Its status compares it with the paper's "This work" value for the same cell (mean and std over the
paper's 5 seeds); the ``test`` column says which comparison was made:

- one run (n = 1): "within the paper's spread" when |ours - paper| <= 2 x the paper's std (a prediction
  interval for one run), else "differs";
- a mean over n >= 2 seeds: Welch's t-test of the two means with both spreads (ours: std over our n
  seeds; the paper's: its std over 5 seeds): "consistent with the paper" when p >= 0.05, else "differs";
- "no spread printed": the paper prints no std for the cell (its eps = inf columns): see diff;
- "not comparable (reduced protocol)": the run used fewer steps, another q or a training subset;
- "not run here (...)": with the reason (profile, data set unavailable offline, run not finished).

Runs at reduced width say so in ``setting`` and in their status. Numbers the paper quotes from
other work are rows of their own, labelled "paper, cited", with nothing of ours mixed in.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dirdp import paper, theory
from dirdp.data import missing_files
from dirdp.experiments import METHODS, PaperObject, Profile, fmt
from dirdp.presets import get_preset

CONFIG_DIR = Path(__file__).resolve().parents[1] / "config"
MODEL_NAMES = {"inception": "Inception", "resnet18": "ResNet-18", "resnet9": "ResNet-9", "papernot_cnn": "CNN"}
SPREAD = 2.0
WIDTH_STYLE = ["o-", "s--", "^:"]  # ours at the widest width run, the next, the next
PAPER_SEEDS = 5  # the paper's tables are means +- std over 5 seeds (Section 4.1.2)
WELCH_ALPHA = 0.05
METHOD_COLOR = {"Algorithm 1": 0, "DP-SGD": 1, "Tempered sigmoid DP-SGD": 2, "LATENT": 3, "DPNAS": 4,
                "Gaussian penultimate layer": 5, "Equivariant DP-SGD": 6}  # tab10 indices  # paper std multiples that count as "within the paper's spread"


def read_run(path: str | Path) -> dict:
    """The fields of one result JSON that tables need (provenance stays in the file)."""
    rec = json.loads(Path(path).read_text())
    cfg = rec["provenance"]["config"]
    preset = get_preset(rec["dataset"])
    reduced = [f"T={rec['steps']}" if rec["steps"] != preset.steps else None,
               f"q={rec['q']:.4g}" if not math.isclose(rec["q"], preset.q) else None,
               f"training subset {cfg['train_subset']}" if cfg.get("train_subset") else None]
    reduced = [r for r in reduced if r]
    eps = math.inf if rec["eps_target"] == "inf" else float(rec["eps_target"])
    return dict(
        path=str(path), dataset=rec["dataset"], method=rec.get("method", "alg1"), eps=eps, seed=rec["seed"],
        q=rec["q"], alpha=rec["alpha"], lr=cfg["lr"], optimizer=cfg["optimizer"], steps=rec["steps"],
        width=rec["width"], rstar=rec["rstar"],
        certified_eps=math.inf if rec["epsilon"] == "inf" else rec["epsilon"],
        test=rec["test_accuracy"], val=rec.get("val_accuracy"),
        protocol=("LATENT protocol (local DP)" if rec.get("method") == "latent" else "paper protocol" if not reduced
                  else "reduced protocol (" + ", ".join(reduced) + ")"),
        width_label=rec["width_label"], device=rec["provenance"]["device"],
        git_commit=rec["provenance"]["git_commit"], wall_time_s=rec["wall_time_s"],
    )


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
    the paper's value, then the paper's cited rows. Columns: object, dataset, metric, method, model, label,
    eps, eps_reported, q, alpha, lr, width, mean, std, n, seeds, paper, paper_std, diff, status, test,
    p_value, setting, certified_eps, rstar, source, runs (the profiles the runs come from)."""
    keys = _keys(obj)
    expected = profile.runs(obj.name)
    runs = pd.DataFrame([dict(read_run(p), profile=Path(p).parts[-3]) for p in profile_run_paths(obj, profile, runs_root)
                         if Path(p).exists()])
    printed = paper.accuracy(obj.paper_object or obj.name)
    mine = printed[printed.label == "paper"]
    model = MODEL_NAMES[get_preset(obj.dataset).model]

    # every cell of the grid: the profile's, or (when it trains none) the paper's own
    cells = {tuple(getattr(r, k) for k in keys) for r in expected}
    if obj.axis != "lr":  # the paper's own cells too, its DP-SGD baseline included (no numbers for Figure 2)
        key = {v: k for k, v in METHODS.items()}
        cells |= {(key[row.method], row.eps, row.q)[: len(keys)] for row in mine.itertuples()}
    rows = []
    for cell in sorted(cells):
        sel = dict(zip(keys, cell))
        base = dict(object=obj.name, dataset=obj.dataset, metric=obj.metric, method=METHODS[sel["method"]],
                    model={"tempered": MODEL_NAMES["papernot_cnn"], "latent": "conv + FC"}.get(sel["method"], model),
                    eps=sel["eps"], q=sel.get("q"), alpha=sel.get("alpha"), lr=sel.get("lr"))
        ref = _paper_cell(mine, base)
        base.update(paper=ref[0], paper_std=ref[1], source=ref[2])
        got = runs
        for k, v in sel.items() if len(got) else ():
            got = got[got[k] == v] if k == "method" else got[np.isclose(got[k].astype(float), v)]
        got = got[got[obj.metric].notna()] if len(got) else got
        if not len(got):
            planned = any(tuple(getattr(r, k) for k in keys) == cell for r in expected)
            rows.append(dict(base, label="paper" if ref[0] is not None else "not run", n=0,
                             status=_not_run(obj, profile, planned)))
            continue
        for width, at in sorted(got.groupby("width"), key=lambda g: -g[0]):  # full width first
            vals = at[obj.metric]
            first = at.iloc[0]
            row = dict(base, label="run here", width=width, mean=round(vals.mean(), 3),
                       std=round(vals.std(ddof=1), 3) if len(vals) > 1 else None, n=len(vals),
                       seeds=" ".join(str(s) for s in sorted(at.seed)), setting=f"{first.protocol}, {first.width_label}",
                       certified_eps=at.certified_eps.max(), rstar=first.rstar,
                       runs=" ".join(sorted(set(at.profile))))
            row["diff"] = None if ref[0] is None else round(row["mean"] - ref[0], 3)
            row["status"] = _status(row, width != 1.0, first.protocol != "paper protocol")
            row["test"], row["p_value"] = _comparison(row)
            rows.append(row)
    if not rows:  # Figure 2 outside its profile: one row that says so
        rows.append(dict(object=obj.name, dataset=obj.dataset, metric=obj.metric, method=METHODS["alg1"], model=model,
                         label="not run", n=0, status=_not_run(obj, profile, False)))
    for c in printed[printed.label == "paper, cited"].itertuples():
        rows.append(dict(object=obj.name, dataset=obj.dataset, metric=obj.metric, method=c.method, model=c.model,
                         label="paper, cited", eps=c.eps, eps_reported=c.eps_reported, q=None, paper=c.accuracy,
                         paper_std=c.std if not pd.isna(c.std) else None, n=0, source=c.source,
                         status="cited by the paper; not run here"))
    cols = ["object", "dataset", "metric", "method", "model", "label", "eps", "eps_reported", "q", "alpha", "lr",
            "width", "mean", "std", "n", "seeds", "paper", "paper_std", "diff", "status", "test", "p_value", "setting",
            "certified_eps", "rstar", "source", "runs"]
    return pd.DataFrame(rows).reindex(columns=cols)


def welch(mean: float, std: float, n: int, paper_mean: float, paper_std: float,
          paper_n: int = PAPER_SEEDS) -> tuple[float, float, float]:
    """Welch's t-test of two means from their summaries: (t, degrees of freedom, two-sided p)."""
    from scipy import stats

    va, vb = std**2 / n, paper_std**2 / paper_n
    t = (mean - paper_mean) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (paper_n - 1))
    return t, df, float(2 * stats.t.sf(abs(t), df))


def _comparison(row: dict) -> tuple[str | None, float | None]:
    """Which comparison the status rests on, in words, and its p-value (Welch only)."""
    if row.get("paper") is None or row.get("paper_std") is None or row["status"].startswith("not comparable"):
        return None, None
    if (row.get("n") or 1) < 2 or not row.get("std"):
        return f"one run: |diff| <= {SPREAD:g} x paper std ({SPREAD * row['paper_std']:.2f})", None
    t, df, p = welch(row["mean"], row["std"], row["n"], row["paper"], row["paper_std"])
    return f"Welch t = {t:.2f}, df = {df:.1f}, p = {p:.3g} (ours n = {row['n']}, paper n = {PAPER_SEEDS})", round(p, 5)


def _paper_cell(printed: pd.DataFrame, row: dict) -> tuple[float | None, float | None, str | None]:
    sel = printed[(printed.method == row["method"]) & np.isclose(printed.eps, row["eps"])]
    if row.get("q") is not None and sel.q.notna().any():
        sel = sel[np.isclose(sel.q, row["q"])]
    if len(sel) != 1 or row.get("lr") is not None:
        return None, None, None
    std = sel["std"].iloc[0]
    return float(sel.accuracy.iloc[0]), None if pd.isna(std) else float(std), sel.source.iloc[0]


def _status(row: dict, reduced_width: bool, reduced_protocol: bool) -> str:
    if row["paper"] is None:
        return "no value printed in the paper"
    if reduced_protocol:
        return "not comparable (reduced protocol)"
    suffix = " (reduced width)" if reduced_width else ""
    if row["paper_std"] is None:
        return "no spread printed" + suffix
    if (row.get("n") or 1) >= 2 and row.get("std"):  # a mean over seeds: Welch's t-test with both spreads
        p = welch(row["mean"], row["std"], row["n"], row["paper"], row["paper_std"])[2]
        return ("consistent with the paper" if p >= WELCH_ALPHA else "differs") + suffix
    within = abs(row["diff"]) <= SPREAD * row["paper_std"]
    return ("within the paper's spread" if within else "differs") + suffix


def _not_run(obj: PaperObject, profile: Profile, planned: bool) -> str:
    if obj.name not in profile.objects:
        offline = "; its data set is not on this machine" if missing_files(obj.dataset) else ""
        return f"not run here (not in the '{profile.name}' profile{offline})"
    if obj.dataset not in profile.datasets:
        return "not run here (data set left out of this DAG)"
    if not planned:
        return f"not run here (not in the '{profile.name}' profile's grid)"
    return "not run here (result file missing: run the DAG)"


def show(table: pd.DataFrame) -> str:
    """The table as text, ours beside the paper's, for a notebook cell or a log."""
    cols = ["method", "model", "label", "eps", "eps_reported", "q", "alpha", "lr", "width", "mean", "std", "n",
            "paper", "paper_std", "diff", "status"]
    t = table[[c for c in cols if table[c].notna().any()]].copy()
    for c in ("eps", "eps_reported"):
        if c in t:
            t[c] = t[c].map(lambda v: "" if pd.isna(v) else fmt(float(v)))
    return t.fillna("").to_string(index=False)


def _eps_x(eps: pd.Series, finite_max: float) -> pd.Series:
    """eps on the x axis, with inf drawn one step right of the largest finite eps."""
    return eps.map(lambda e: finite_max * 1.6 if math.isinf(e) else e)


def figure(obj: PaperObject, table: pd.DataFrame, *, title_note: str = ""):
    """Accuracy against the object's axis: ours (markers, error bars = one std over seeds), the
    paper's "This work" (line, band = one std) and the cited numbers (open markers)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    if obj.axis == "lr":
        return _figure_lr(obj, table, title_note)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    _draw(ax, obj, table, title_note)
    fig.tight_layout()
    return fig


def baselines_figure(panels: list[tuple[PaperObject, pd.DataFrame]], *, title_note: str = ""):
    """Accuracy against eps for every method, one panel per data set (the baselines_comparison figure)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.6), squeeze=False)
    for ax, (obj, table) in zip(axes[0], panels):
        _draw(ax, obj, table, title_note)
    fig.tight_layout()
    return fig


def _draw(ax, obj: PaperObject, table: pd.DataFrame, title_note: str) -> None:
    import seaborn as sns

    x = "q" if obj.axis == "q" else "eps"
    finite = [e for e in table.eps.dropna() if math.isfinite(e)] or [1.0]
    xmax = max(finite + [e for e in table.eps_reported.dropna() if math.isfinite(e)])
    palette = sns.color_palette("tab10")
    methods = list(dict.fromkeys(table.method))
    for i, m in enumerate(methods):
        color = palette[METHOD_COLOR.get(m, 5 + i) % 10]  # one colour per method in every figure
        paper_rows = table[(table.method == m) & table.paper.notna() & (table.label != "paper, cited")]
        if len(paper_rows):
            p = paper_rows.sort_values(x)
            px = p[x] if x == "q" else _eps_x(p.eps, xmax)
            ax.plot(px, p.paper, "--", color=color, label=f"{m} (paper)")
            ax.fill_between(px, p.paper - p.paper_std.fillna(0), p.paper + p.paper_std.fillna(0), color=color, alpha=0.15)
        ours = table[(table.method == m) & (table.label == "run here")]
        widths = sorted(ours.width.dropna().unique(), reverse=True)
        for j, w in enumerate(widths):  # one line per model width: full width solid, reduced ones lighter
            at = ours[ours.width == w].sort_values(x)
            ox = at[x] if x == "q" else _eps_x(at.eps, xmax)
            what = ("; eps is local DP per record" if m == "LATENT" else
                    "" if len(widths) == 1 and w == 1.0 else f", {'full' if w == 1.0 else format(w, 'g') + 'x'} width")
            ax.errorbar(ox, at["mean"], yerr=at["std"].fillna(0).astype(float), fmt=WIDTH_STYLE[min(j, 2)],
                        color=color, capsize=3, alpha=1.0 if j == 0 else 0.75, label=f"{m} (run here{what})")
        cited = table[(table.method == m) & (table.label == "paper, cited")]
        for c in cited.itertuples():
            e = c.eps_reported if not pd.isna(c.eps_reported) else c.eps
            cx = e if x == "q" else (xmax * 1.6 if math.isinf(e) else e)
            ax.plot(cx, c.paper, marker="s", mfc="none", color=color, ls="none")
        if len(cited):
            ax.plot([], [], marker="s", mfc="none", color=color, ls="none", label=f"{m} ({cited.source.iloc[0]}, cited)")
    if x == "eps":
        ax.set_xscale("log")
        ticks = sorted(set(finite)) + ([xmax * 1.6] if table.eps.map(math.isinf).any() else [])
        ax.set_xticks(ticks, [fmt(t) for t in sorted(set(finite))] + (["inf"] if len(ticks) > len(set(finite)) else []))
        ax.minorticks_off()
        ax.set_xlabel("epsilon (delta = 1e-5)")
    else:
        ax.set_xscale("log")
        ax.set_xlabel("sampling rate q")
    ax.set_ylabel(f"{obj.metric} accuracy (%)")
    ax.set_title(f"{obj.title}: {obj.dataset}" + (f"\n{title_note}" if title_note else ""), fontsize=10)
    ax.legend(fontsize=7, loc="lower right")


def _figure_lr(obj: PaperObject, table: pd.DataFrame, title_note: str):
    """Figure 2: accuracy against gamma (left) and gamma_eff = gamma kappa(s_y = 0.9) (right), per alpha."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    ours = table[table.label == "run here"]
    for alpha, g in ours.groupby("alpha"):
        g = g.sort_values("lr")
        k = theory.kappa(s_y=0.9, r=float(g.rstar.iloc[0]), alpha=float(alpha))
        left.plot(g.lr, g["mean"], "o-", label=f"alpha = {alpha:g}")
        right.plot(g.lr * k, g["mean"], "o-", label=f"alpha = {alpha:g}")
    left.set(xscale="log", xlabel="learning rate gamma", ylabel="test accuracy (%)")
    right.set(xscale="log", xlabel="effective learning rate gamma * kappa(s_y = 0.9)")
    if len(ours):
        left.legend(fontsize=7)
    else:
        left.text(0.5, 0.5, "not run here", transform=left.transAxes, ha="center")
    fig.suptitle(f"{obj.title}: {obj.dataset}, eps = 1 (the paper prints no numbers for this figure)"
                 + (f"\n{title_note}" if title_note else ""), fontsize=10)
    fig.tight_layout()
    return fig
