"""The headline figure (``figures/<profile>/headline.png``, notebooks/headline.ipynb) and its two tables.

:func:`headline_cells` (the figure's right panel draws its paper's-width Algorithm-1 rows): every cell of the paper
run here (object x method x eps x width x precision, the paper's own models only), ours - paper with its 95% interval
and the verdict of :func:`workflow.report.compare.estimate`, the same rule as the objects' tables (whose rows these
are). Beside it, the cells a reader looks for first:
:func:`paper_cells`, every Algorithm-1 cell the paper prints for an object run here (whether or not it is run here
at the paper's width yet), and :func:`privacy_cost`, what privacy costs at the paper's width (accuracy at eps = inf
minus that at each eps), ours beside the paper's. The figure's left panel, the privacy tests, is
:mod:`workflow.report.headline_plot`'s, drawn from the audit CSVs themselves.
"""

from __future__ import annotations

import math

import pandas as pd

from dirdp import methods
from workflow.report.compare import PAPER_SEEDS, welch_from_stats
from workflow.report.objects import paper_model

CELL_COLUMNS = ["object", "dataset", "method", "eps", "width", "precision", "n", "ours_mean", "ours_std", "paper_mean",
                "paper_std", "paper_n", "diff", "ci_low", "ci_high", "interval", "interval_df", "verdict"]
FULL_WIDTH = 1.0  # the paper's models: the width of the cells the findings lead with
PAPER_CELL_COLUMNS = ["object", "dataset", "eps", "paper_mean", "paper_std"]
PRIVACY_COST_COLUMNS = ["object", "dataset", "eps", "width", "precision", "mean_inf", "std_inf", "n_inf", "mean_eps",
                        "std_eps", "n_eps", "ours_cost", "ci_low", "ci_high", "interval", "interval_df", "paper_inf",
                        "paper_eps", "paper_cost", "diff", "status"]  # interval, status: keys (labels.py)


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
