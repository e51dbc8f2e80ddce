"""Accuracy against model width (``results/<profile>/width_effect.csv`` and its figure, notebooks/width_effect.ipynb):
Algorithm 1 with the paper's model and protocol, one row per data set, eps, width and precision, beside the paper's
full-width value for the cell.

A data set's panel shows its budgets (:data:`PANELS`: the eps of its first verdict cell, and eps = inf, at every width
run) and every other eps the paper prints as soon as it has a run at the paper's width (:data:`FULL_WIDTH`), with
whatever other width ran there: the full-width campaign fills the paper's grid cell by cell, and each cell appears
here once its first run exists, with no code change.
"""

from __future__ import annotations

import math

import pandas as pd

from dirdp import methods
from workflow.report.headline import FULL_WIDTH

# data set -> (the paper object whose runs and printed values it reads, the eps always shown)
PANELS = {"fashionmnist": ("table4_fashionmnist", (2.0, math.inf)), "mnist": ("table2_mnist", (1.0, math.inf))}
KEYS = ["dataset", "eps", "width", "precision"]
COLUMNS = [*KEYS, "mean", "std", "n", "seeds", "paper_full_width", "paper_std", "diff_to_paper"]


def shown_runs(runs: pd.DataFrame, budgets) -> pd.DataFrame:
    """The runs of one data set its panel shows (``runs``: :func:`dirdp.run_result.read_run` records): Algorithm 1
    with the paper's BatchNorm and protocol, at the panel's ``budgets`` and at every eps with a run at the paper's
    width."""
    if runs.empty:
        return pd.DataFrame(columns=["method", "eps", "width", "precision", "seed", "test"])
    alg1 = runs[(runs.method == methods.ALG1) & (runs.norm == "batch") & runs.paper_protocol.astype(bool)]
    eps = set(budgets) | set(alg1[alg1.width.astype(float) == FULL_WIDTH].eps)
    return alg1[alg1.eps.isin(eps)]


def paper_values(printed: pd.DataFrame) -> dict:
    """(data set, eps) -> the paper's Algorithm-1 row (accuracy, std) of ``printed`` (:func:`workflow.paper.accuracy`
    rows)."""
    mine = printed[(printed.label == "paper") & (printed.method == methods.label(methods.ALG1))]
    return {(r.dataset, float(r.eps)): r for _, r in mine.iterrows()}


def summary(runs: pd.DataFrame, printed: pd.DataFrame) -> pd.DataFrame:
    """``runs`` (with a ``dataset`` column: :func:`shown_runs` of each panel) as one row per data set, eps, width and
    precision (each precision apart: their seeds are separate samples): mean, std (ddof = 1) and n of the test
    accuracy, the seeds, and the paper's full-width value and std for the cell with ours - paper. Columns:
    :data:`COLUMNS`."""
    if runs.empty:
        return pd.DataFrame(columns=COLUMNS)
    out = runs.groupby(KEYS).test.agg(mean="mean", std="std", n="count").reset_index()
    out["seeds"] = [" ".join(str(s) for s in sorted(g.seed)) for _, g in runs.groupby(KEYS)]
    ref = paper_values(printed)
    none = pd.Series({"accuracy": math.nan, "std": math.nan})
    out["paper_full_width"] = [ref.get((d, float(e)), none).accuracy for d, e in zip(out.dataset, out.eps)]
    out["paper_std"] = [ref.get((d, float(e)), none)["std"] for d, e in zip(out.dataset, out.eps)]
    out["diff_to_paper"] = (out["mean"] - out.paper_full_width).round(3)
    return out[COLUMNS]
