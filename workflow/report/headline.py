"""The headline figure (``figures/<profile>/headline.png``, notebooks/headline.ipynb) and its two tables.

Left, :func:`headline_cells`: every cell of the paper run here (object x method x eps x width x precision, the paper's
own models only), ours - paper with its 95% interval and the verdict of :func:`workflow.report.compare.estimate`, the
same rule as the objects' tables (whose rows these are). Beside it, the cells a reader looks for first:
:func:`paper_cells`, every Algorithm-1 cell the paper prints for an object run here (whether or not it is run here
at the paper's width yet), and :func:`privacy_cost`, what privacy costs at the paper's width (accuracy at eps = inf
minus that at each eps), ours beside the paper's. Right, :func:`audit_points`: for each audited model the
claimed epsilon against the audited 95% lower bound, and the exact bound where the audit computes one, read from the
audit CSVs; a row with no finite claim for its own neighbouring relation is left out.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dirdp import methods, provenance
from dirdp.protocol import Protocol
from workflow.report import labels
from workflow.report.compare import PAPER_SEEDS, welch_from_stats
from workflow.report.objects import paper_model

CELL_COLUMNS = ["object", "dataset", "method", "eps", "width", "precision", "n", "ours_mean", "ours_std", "paper_mean",
                "paper_std", "paper_n", "diff", "ci_low", "ci_high", "interval", "interval_df", "verdict"]
AUDIT_COLUMNS = ["audit", "method", "model", "setting", "q", "T", "adjacency", "adversary_sees", "claimed_eps",
                 "eps_lower_bound", "eps_exact_bound", "ceiling", "source"]
PAPER_DELTA = Protocol.delta  # the paper's delta, 1e-5 (every central claim here)
FULL_WIDTH = 1.0  # the paper's models: the width of the cells the findings lead with
PAPER_CELL_COLUMNS = ["object", "dataset", "eps", "paper_mean", "paper_std"]
PRIVACY_COST_COLUMNS = ["object", "dataset", "eps", "width", "precision", "mean_inf", "std_inf", "n_inf", "mean_eps",
                        "std_eps", "n_eps", "ours_cost", "ci_low", "ci_high", "interval", "interval_df", "paper_inf",
                        "paper_eps", "paper_cost", "diff", "status"]  # interval, status: keys (workflow.report.labels)


def headline_cells(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """One row per paper cell run here, from the objects' tables (:func:`workflow.report.object_table`): the rows made
    here with the paper's model and protocol beside a value the paper prints. Columns: :data:`CELL_COLUMNS`."""
    rows = []
    for t in tables:
        here = paper_model(t[(t.origin == "here") & t.paper.notna()])
        here = here[here.status != "not_comparable"]
        for r in here.itertuples():
            rows.append(dict(object=r.object, dataset=r.dataset, method=r.method, eps=r.eps, width=r.width,
                             precision=getattr(r, "precision", None) or "fp32", n=int(r.n), ours_mean=r.mean,
                             ours_std=r.std, paper_mean=r.paper, paper_std=r.paper_std, paper_n=PAPER_SEEDS,
                             diff=r.diff, ci_low=r.ci_low, ci_high=r.ci_high, interval=r.interval,
                             interval_df=r.interval_df, verdict=r.verdict))
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


def paper_cells(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Every Algorithm-1 cell the paper prints, for each object with a paper cell run here (at any width: an object
    :func:`headline_cells` has a row of), from the objects' tables (:func:`workflow.report.object_table`, whose rows
    carry the paper's value whether the cell is run here or not): one row per (object, eps), in the tables' order
    and by eps, inf last. An object not run here at all (another profile's, or a data set not on this machine) has
    none. Columns: :data:`PAPER_CELL_COLUMNS`."""
    alg1 = methods.label(methods.ALG1)
    rows = []
    for t in tables:
        if headline_cells([t]).empty:
            continue
        printed = t[(t.method == alg1) & t.origin.isin(["paper", "here"]) & t.paper.notna()]
        for eps, at in sorted(printed.groupby("eps"), key=lambda g: float(g[0])):
            first = at.iloc[0]
            rows.append(dict(object=first.object, dataset=first.dataset, eps=float(eps), paper_mean=first.paper,
                             paper_std=first.paper_std))
    return pd.DataFrame(rows, columns=PAPER_CELL_COLUMNS)


def full_width(cells: pd.DataFrame) -> pd.Series:
    """Which rows of :func:`headline_cells` are at the paper's width (:data:`FULL_WIDTH`), as a boolean mask."""
    return pd.to_numeric(cells.width, errors="coerce") == FULL_WIDTH


def _side(cells: pd.DataFrame, obj: str, eps: float) -> pd.DataFrame:
    """The full-width Algorithm-1 rows of ``cells`` for one paper cell: one per precision run."""
    at = cells[full_width(cells) & (cells.object == obj) & (cells.method == methods.label(methods.ALG1))]
    return at[at.eps.astype(float) == eps]


def _pair(private: pd.DataFrame, public: pd.DataFrame):
    """The precision whose full-width runs both sides have, the one with the most seeds on its thinner side (then in
    all), with its two rows; None where no precision ran on both sides (a precision is never paired with
    another: bf16 and fp32 runs are separate samples)."""
    common = sorted(set(private.precision) & set(public.precision))
    if not common:
        return None
    pairs = [(p, private[private.precision == p].iloc[0], public[public.precision == p].iloc[0]) for p in common]
    return max(pairs, key=lambda x: (min(x[1].n, x[2].n), x[1].n + x[2].n))


def _r3(value):
    return None if value is None or pd.isna(value) else round(float(value), 3)


def privacy_cost(cells: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """What privacy costs at the paper's width: for each data set (object) of ``paper`` (:func:`paper_cells`) and
    each private eps it prints, the accuracy at eps = inf minus that at eps, from the full-width Algorithm-1 rows of
    ``cells`` (:func:`headline_cells`; both sides in one precision, :func:`_pair`), with the n of each side and a
    95% Welch interval where both have n >= 2 (none otherwise: one run gives no spread); beside it the paper's own
    cost (its eps = inf value minus its eps value) and ours - paper. Where a side has no full-width run (or the two
    sides none in one precision) the cost is empty, the side that ran is given as it is, and the status says which.
    Columns: :data:`PRIVACY_COST_COLUMNS`."""
    rows = []
    for obj, cellsof in paper.groupby("object", sort=False):
        inf = cellsof[cellsof.eps.map(math.isinf)]
        if inf.empty:  # the paper prints no non-private value for the object: no cost to compare
            continue
        public = _side(cells, obj, math.inf)
        for c in cellsof[~cellsof.eps.map(math.isinf)].itertuples():
            paper_cost = inf.paper_mean.iloc[0] - c.paper_mean
            row = dict(object=obj, dataset=c.dataset, eps=c.eps, width=FULL_WIDTH, n_inf=0, n_eps=0,
                       paper_inf=inf.paper_mean.iloc[0], paper_eps=c.paper_mean, paper_cost=_r3(paper_cost))
            private = _side(cells, obj, c.eps)
            missing = [e for e, side in ((c.eps, private), (math.inf, public)) if side.empty]
            pair = None if missing else _pair(private, public)
            if pair is None:  # each side that ran, by its row with the most seeds; no cost
                for key, side in (("eps", private), ("inf", public)):
                    if not side.empty:
                        best = side.loc[side.n.astype(int).idxmax()]
                        row.update({f"mean_{key}": best.ours_mean, f"std_{key}": best.ours_std,
                                    f"n_{key}": int(best.n)})
                row["status"] = "not_run" if missing else "no_common_precision"  # n_eps, n_inf: which side
            else:
                prec, at_eps, at_inf = pair
                n_eps, n_inf = int(at_eps.n), int(at_inf.n)
                cost = at_inf.ours_mean - at_eps.ours_mean
                row.update(precision=prec, mean_inf=at_inf.ours_mean, std_inf=at_inf.ours_std, n_inf=n_inf,
                           mean_eps=at_eps.ours_mean, std_eps=at_eps.ours_std, n_eps=n_eps, ours_cost=_r3(cost),
                           diff=_r3(cost - paper_cost), status="both_run")
                if n_inf >= 2 and n_eps >= 2:
                    w = welch_from_stats(at_inf.ours_mean, at_inf.ours_std, n_inf, at_eps.ours_mean, at_eps.ours_std,
                                         n_eps)
                    row.update(ci_low=_r3(w["lo"]), ci_high=_r3(w["hi"]), interval="welch",
                               interval_df=round(w["df"], 1))
                else:  # a side with one run (n_eps, n_inf say which)
                    row["interval"] = "one_run"
            rows.append(row)
    return pd.DataFrame(rows, columns=PRIVACY_COST_COLUMNS)


def _claim(t: pd.DataFrame, fallback: str) -> pd.Series:
    """The claim each audit row faces: ``matched_claim_eps`` (the claim for the row's own adjacency) where the CSV
    has it, else ``fallback``; inf where no finite claim exists (an empty cell)."""
    col = t["matched_claim_eps"] if "matched_claim_eps" in t else t[fallback]
    return pd.to_numeric(col, errors="coerce").fillna(math.inf)


INFINITE = ("inf", "+inf", "infinity", "unbounded", "∞")  # how a CSV may spell an infinite bound


def _number(col) -> pd.Series:
    """A column of bounds as floats: inf where it says so in words (:data:`INFINITE`), NaN where it is empty."""
    col = pd.Series(col)
    words = col.map(lambda v: isinstance(v, str) and v.strip().lower() in INFINITE)
    return pd.to_numeric(col.where(~words, math.inf), errors="coerce")


def _delta(method: str) -> float:
    """The delta of a canary row's claim: 0 for a local guarantee (LATENT's eps-LDP per record), else the paper's."""
    return 0.0 if methods.is_local(method) else PAPER_DELTA


def _ceiling(t: pd.DataFrame) -> pd.Series:
    """Each audit row's trial ceiling, the largest lower bound its held-out trials can certify (no error on them), in
    the rows' order: the CSV's ``ceiling`` where it has one for the row, else from its ``held_out_per_world`` (with
    the delta of its method's claim, at its ``confidence``), else NaN (not known)."""
    out = (_number(t["ceiling"]) if "ceiling" in t else pd.Series(math.nan, index=t.index)).tolist()
    if "held_out_per_world" in t:
        from dirdp.audit.stats import epsilon_lower_bound  # torch: only where a ceiling is computed

        for i, (_, r) in enumerate(t.iterrows()):
            n = r["held_out_per_world"]
            if math.isnan(out[i]) and not pd.isna(n):
                out[i] = epsilon_lower_bound(false_positives=0, n_negatives=int(n), false_negatives=0,
                                             n_positives=int(n), delta=_delta(r["method"]),
                                             confidence=float(r.get("confidence", 0.95))).epsilon
    return pd.Series(out, dtype=float)


def audit_points(results: str | Path) -> pd.DataFrame:
    """The audited models of ``results`` (audit_canary.csv, audit_subspace.csv, audit_batchnorm.csv,
    audit_first_layer.csv, audit_control.csv, audit_one_run.csv, those that exist), one row per model, setting and adversary: claimed eps, 95% lower bound, and the exact bound where the
    audit computes one for the mechanism (Algorithm 1's never-sampled bound: NaN for the others; inf, or a word of
    :data:`INFINITE` in the CSV: no finite eps), and the trial ceiling (:func:`_ceiling`: NaN where the CSV gives no
    way to know it). Any number of rows per CSV; rows alike but for their adjacency are one row (adjacency
    "add/replace"); rows with no finite claim are left out. Columns: :data:`AUDIT_COLUMNS`."""
    results = Path(results)
    parts = []
    if (path := results / "audit_canary.csv").exists():
        t, _ = provenance.read_csv(path)
        sees = t["adversary_sees"] if "adversary_sees" in t else t.statistic.map(labels.SEES).fillna("one release")
        setting = [("one release" if methods.is_local(m) else f"q = {q:g}, T = {int(n):,}")
                   for m, q, n in zip(t.method, t.q, t["T"])]
        parts.append(pd.DataFrame(dict(audit="canary", method=t.method, model=t.model, setting=setting, q=t.q, T=t["T"],
                                       adjacency=t["adjacency"] if "adjacency" in t else "add", adversary_sees=sees,
                                       claimed_eps=_claim(t, "claimed_eps"), eps_lower_bound=_number(t.eps_lower_bound),
                                       eps_exact_bound=_number(t.eps_exact_bound), ceiling=_ceiling(t).values,
                                       source=path.name)))
    if (path := results / "audit_subspace.csv").exists():
        t, _ = provenance.read_csv(path)
        model = t.model.str.split(" (", regex=False).str[0]  # "papernot_cnn w=1 (tanh, ...)": its name and width
        parts.append(pd.DataFrame(dict(audit="subspace", method=t.method, model=model, setting=t.setting, q=t.q,
                                       T=t["T"], adjacency=t.adjacency,
                                       adversary_sees=t["adversary_sees"] if "adversary_sees" in t else "every update",
                                       claimed_eps=_claim(t, "claimed_eps"), eps_lower_bound=_number(t.eps_lower_bound),
                                       eps_exact_bound=_number(t.exact_bound).where(t.method.map(methods.is_ours)),
                                       ceiling=_ceiling(t).values, source=path.name)))
    if (path := results / "audit_batchnorm.csv").exists():
        t, _ = provenance.read_csv(path)
        t = t[t.kind == "running_statistics"]
        model = t.model + ", BatchNorm running statistics"
        parts.append(pd.DataFrame(dict(audit="batchnorm", method=methods.ALG1, model=model,
                                       setting="one step, q = 1", q=1.0, T=1, adjacency=t.adjacency,
                                       adversary_sees=t["adversary_sees"] if "adversary_sees" in t else "final model",
                                       claimed_eps=_claim(t, "reference"), eps_lower_bound=_number(t.value),
                                       eps_exact_bound=(_number(t.exact_bound) if "exact_bound" in t else math.nan),
                                       ceiling=_ceiling(t).values, source=path.name)))
    if (path := results / "audit_first_layer.csv").exists():  # the paper's Inception, its protocol, the final model
        t, _ = provenance.read_csv(path)
        # each setting's own test: either statistic; with a conv bias the weights' alone (the bias moves the mean)
        biased = t["conv_bias"].astype(str).str.lower().eq("true") if "conv_bias" in t else False
        t = t[(t.statistic == "either") | (biased & (t.statistic == "first_conv"))].reset_index(drop=True)
        model = t.model + (", " + t.precision if "precision" in t else "")  # each setting apart (bf16, fp32, bias)
        parts.append(pd.DataFrame(dict(audit="first layer", method=methods.ALG1, model=model,
                                       setting=[f"q = {q:.3g}, T = {int(n):,}" for q, n in zip(t.q, t["T"])], q=t.q,
                                       T=t["T"], adjacency=t.adjacency, adversary_sees=t.adversary_sees,
                                       claimed_eps=_claim(t, "claimed_eps"), eps_lower_bound=_number(t.eps_lower_bound),
                                       eps_exact_bound=_number(t.exact_bound), ceiling=_ceiling(t).values,
                                       source=path.name)))
    if (path := results / "audit_control.csv").exists():  # DP-SGD audited by a test with power
        t, _ = provenance.read_csv(path)
        parts.append(pd.DataFrame(dict(audit="control", method=t.method, model=t.model,
                                       setting=[f"q = {q:.3g}, T = {int(n):,}" for q, n in zip(t.q, t["T"])], q=t.q,
                                       T=t["T"], adjacency="add", adversary_sees=t.adversary_sees,
                                       claimed_eps=_claim(t, "claimed_eps"), eps_lower_bound=_number(t.eps_lower_bound),
                                       eps_exact_bound=math.nan, ceiling=_ceiling(t).values,
                                       source=path.name)))
    if (path := results / "audit_one_run.csv").exists():  # the one-run audit of real trainings: each score's best k
        t, _ = provenance.read_csv(path)
        t = t[(t.verdict != "not_run_yet") & t.best.astype(str).str.lower().eq("true")].reset_index(drop=True)
        model = [f"{m} {w} ({s.replace('_', ' ')})" for m, w, s in zip(t.model, t.model_label, t.score)]
        parts.append(pd.DataFrame(dict(audit="one run", method=t.method, model=model,
                                       setting=[f"q = {q:.3g}, T = {int(n):,}, {int(m):,} canaries"
                                                for q, n, m in zip(t.q, t["T"], t.canaries)], q=t.q, T=t["T"],
                                       adjacency="add", adversary_sees="final model",
                                       claimed_eps=_number(t.claimed_eps), eps_lower_bound=_number(t.eps_lower_bound),
                                       eps_exact_bound=math.nan, ceiling=_number(t.most_these_guesses_can_show),
                                       source=path.name)))
    if not parts:
        return pd.DataFrame(columns=AUDIT_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    out = out[out.claimed_eps.map(math.isfinite)]
    merged = {}  # rows alike but for their adjacency: one row
    for r in out.to_dict("records"):
        key = tuple(str(v) for c, v in r.items() if c != "adjacency")
        if key in merged:
            merged[key]["adjacency"] += f"/{r['adjacency']}"
        else:
            merged[key] = r
    return pd.DataFrame(list(merged.values()), columns=AUDIT_COLUMNS)
