"""One cell made here beside the paper's: the paper's value for the cell, and ours - paper as an estimate.

A cell made here is the mean over its seeds (std with ddof = 1 when n >= 2), one row per model width and precision.
It is compared with the paper's "This work" value for the same cell (mean and std over the paper's 5 seeds) by
one rule, :func:`estimate`: the difference ours - paper with its 95% confidence interval, and a verdict only where
that interval decides it against a stated margin (:data:`MARGIN` accuracy points):

- the interval (:func:`diff_interval`): for a mean over n >= 2 seeds, Welch's, with both spreads (ours: std over
  our n seeds; the paper's: its std over its 5) and Welch-Satterthwaite degrees of freedom; for one run (n = 1),
  the paper's spread only ("paper spread only (n = 1)"): ours - paper +- t(0.975, 4) x paper std x sqrt(1 + 1/5),
  the prediction interval of one more run drawn with the paper's spread; none where the paper prints no std (its
  eps = inf columns);
- the verdict (:func:`verdict`), for a mean over n >= 2 seeds: "within 1 point of the paper" when the whole
  interval lies within +-1; "below the paper" / "above the paper" when it excludes 0 on that side (both at once:
  "below the paper, within 1 point"); otherwise "undecided (n = ...)", our number of seeds: the interval is too wide
  to say. One run claims nothing more (:data:`ONE_RUN`): its interval assumes that our seed spread is the paper's,
  which one run cannot check (at 0.25x width our FashionMNIST eps = 2 spread over three seeds is 2.81 points
  against the paper's 0.18), so it is shown, labelled, and decides nothing.

The status of a row (:func:`status`) is its verdict, or why there is none ("no spread printed", "not comparable
(reduced protocol)", "no value printed in the paper"), and says so when the run is at reduced width. The CSVs carry
each as a key; :mod:`workflow.report.labels` gives the sentences quoted here.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

PAPER_SEEDS = 5  # the paper's tables are means +- std over 5 seeds (Section 4.1.2)
LEVEL = 0.95  # the confidence level of every interval
MARGIN = 1.0  # accuracy points: "within 1 point of the paper"
# the CSVs carry the keys below; their labels ("paper spread only (n = 1)", "no verdict (n = 1)", ...) are
# workflow.report.labels'
PAPER_SPREAD_ONLY = "paper_spread"  # the interval of one run: the paper's spread only
ONE_RUN = "one_run"  # the verdict of one run: it claims nothing beyond its number


def _t(level: float, df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, df)) if math.isfinite(df) else float(stats.norm.ppf(0.5 + level / 2))


def welch_from_stats(mean_a: float, std_a: float, n_a: int, mean_b: float, std_b: float, n_b: int,
                     level: float = LEVEL) -> dict:
    """mean_a - mean_b with its Welch confidence interval at ``level`` from the two samples' summaries (mean, std
    with ddof = 1, n >= 2 each): diff, lo, hi, df (Welch-Satterthwaite; inf when both spreads are 0)."""
    if n_a < 2 or n_b < 2:
        raise ValueError(f"Welch's interval needs n >= 2 in each sample. Found n = {n_a} and {n_b}.")
    va, vb = std_a**2 / n_a, std_b**2 / n_b
    df = (va + vb) ** 2 / (va**2 / (n_a - 1) + vb**2 / (n_b - 1)) if va + vb > 0 else math.inf
    diff = float(mean_a - mean_b)
    half = _t(level, df) * math.sqrt(va + vb)
    return dict(diff=diff, lo=diff - half, hi=diff + half, df=float(df))


def welch_interval(a, b, level: float = LEVEL) -> dict:
    """mean(a) - mean(b) with its Welch confidence interval at ``level`` (both samples' own spreads, Welch-
    Satterthwaite degrees of freedom): diff, lo, hi, df, n_a, n_b; lo and hi None when either sample has n < 2."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    out = dict(diff=float(a.mean() - b.mean()) if len(a) and len(b) else None, lo=None, hi=None, df=None,
               n_a=len(a), n_b=len(b))
    if len(a) < 2 or len(b) < 2:
        return out
    return dict(out, **welch_from_stats(a.mean(), a.std(ddof=1), len(a), b.mean(), b.std(ddof=1), len(b), level))


def diff_interval(mean: float, std: float | None, n: int, paper: float, paper_std: float | None,
                  paper_n: int = PAPER_SEEDS, level: float = LEVEL) -> dict:
    """ours - paper with its confidence interval at ``level``: diff, lo, hi (None: no interval), ``interval``, how it
    was made (a key of :data:`workflow.report.labels.INTERVALS`): "welch" for a mean over n >= 2 seeds (its degrees
    of freedom ``df``), :data:`PAPER_SPREAD_ONLY` for one run, "no_paper_spread" where the paper prints no std."""
    diff = float(mean - paper)
    if paper_std is None or pd.isna(paper_std):
        return dict(diff=diff, lo=None, hi=None, interval="no_paper_spread", df=None)
    if n >= 2 and std is not None and not pd.isna(std):
        w = welch_from_stats(mean, std, n, paper, paper_std, paper_n, level)
        return dict(diff=diff, lo=w["lo"], hi=w["hi"], interval="welch", df=round(w["df"], 1))
    half = _t(level, paper_n - 1) * paper_std * math.sqrt(1 + 1 / paper_n)
    return dict(diff=diff, lo=diff - half, hi=diff + half, interval=PAPER_SPREAD_ONLY, df=None)


def verdict(lo: float | None, hi: float | None, n: int, margin: float = MARGIN) -> str | None:
    """What the interval [lo, hi] of ours - paper over our ``n`` seeds decides against ``margin`` (accuracy
    points), as a key of :data:`workflow.report.labels.VERDICTS`: "within" (the whole interval within +-margin),
    "below"/"above" (it excludes 0 on that side; both: "below_within"/"above_within"), else "undecided"; None
    without an interval, :data:`ONE_RUN` for one run (n = 1), whatever its interval."""
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return None
    if n < 2:
        return ONE_RUN
    within = -margin <= lo and hi <= margin
    side = "below" if hi < 0 else "above" if lo > 0 else None
    if side:
        return f"{side}_within" if within else side
    return "within" if within else "undecided"


def estimate(mean: float, std: float | None, n: int, paper: float | None, paper_std: float | None) -> dict:
    """The comparison of one cell (the rule of this module): diff, ci_low, ci_high, interval, interval_df, verdict
    (None where the paper prints no value, or no spread)."""
    if paper is None or pd.isna(paper):
        return dict(diff=None, ci_low=None, ci_high=None, interval=None, interval_df=None, verdict=None)
    ci = diff_interval(mean, std, n, paper, paper_std)
    return dict(diff=_round(ci["diff"]), ci_low=_round(ci["lo"]), ci_high=_round(ci["hi"]), interval=ci["interval"],
                interval_df=ci["df"], verdict=verdict(ci["lo"], ci["hi"], n))


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def status(row: dict, reduced_protocol: bool) -> str:
    """The status of a cell made here (``row``: paper, verdict), a key of :data:`workflow.report.labels.STATUSES`:
    "compared" (it has a verdict), else why it has none; its sentence (with "(reduced width)") is
    :func:`workflow.report.labels.status`'s."""
    if row.get("paper") is None or pd.isna(row["paper"]):
        return "no_paper_value"
    if reduced_protocol:
        return "not_comparable"
    return "no_spread" if row.get("verdict") is None else "compared"


def _paper_cell(printed: pd.DataFrame, row: dict) -> tuple[float | None, float | None, str | None]:
    """(accuracy, std, source) the paper prints for ``row``'s cell (method, eps, and q where the table varies
    it), or Nones: no such cell, or a Figure-2 cell (lr set), for which the paper prints no numbers."""
    sel = printed[(printed.method == row["method"]) & np.isclose(printed.eps, row["eps"])]
    if row.get("q") is not None and sel.q.notna().any():
        sel = sel[np.isclose(sel.q, row["q"])]
    if len(sel) != 1 or row.get("lr") is not None:
        return None, None, None
    std = sel["std"].iloc[0]
    return float(sel.accuracy.iloc[0]), None if pd.isna(std) else float(std), sel.source.iloc[0]
