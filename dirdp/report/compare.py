"""One cell made here beside the paper's: the paper's value for the cell, the status, and the test behind it.

A cell made here is the mean over its seeds (std with ddof = 1 when n >= 2), one row per model width.
Its status compares it with the paper's "This work" value for the same cell (mean and std over the
paper's 5 seeds); the ``test`` column says which comparison was made:

- one run (n = 1): "within the paper's spread" when |ours - paper| <= 2 x the paper's std (a prediction
  interval for one run), else "differs";
- a mean over n >= 2 seeds: Welch's t-test of the two means with both spreads (ours: std over our n
  seeds; the paper's: its std over 5 seeds): "consistent with the paper" when p >= 0.05, else "differs";
- "no spread printed": the paper prints no std for the cell (its eps = inf columns): see diff;
- "not comparable (reduced protocol)": the run used fewer steps, another q or a training subset;
- "not run here (...)": with the reason (:func:`dirdp.report.objects._not_run`).

Runs at reduced width say so in their status.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

SPREAD = 2.0  # paper std multiples that count as "within the paper's spread"
PAPER_SEEDS = 5  # the paper's tables are means +- std over 5 seeds (Section 4.1.2)
WELCH_ALPHA = 0.05


def welch(mean: float, std: float, n: int, paper_mean: float, paper_std: float,
          paper_n: int = PAPER_SEEDS) -> tuple[float, float, float]:
    """Welch's t-test of two means from their summaries: (t, degrees of freedom, two-sided p)."""
    from scipy import stats

    va, vb = std**2 / n, paper_std**2 / paper_n
    t = (mean - paper_mean) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (paper_n - 1))
    return t, df, float(2 * stats.t.sf(abs(t), df))


def welch_interval(a, b, level: float = 0.95) -> dict:
    """mean(a) - mean(b) with its Welch confidence interval at ``level`` (both samples' own spreads, Welch-
    Satterthwaite degrees of freedom): diff, lo, hi, df, n_a, n_b; lo and hi None when either sample has n < 2."""
    from scipy import stats

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    out = dict(diff=float(a.mean() - b.mean()) if len(a) and len(b) else None, lo=None, hi=None, df=None,
               n_a=len(a), n_b=len(b))
    if len(a) < 2 or len(b) < 2:
        return out
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1)) if va + vb > 0 else math.inf
    half = float(stats.t.ppf(0.5 + level / 2, df)) * math.sqrt(va + vb)
    return dict(out, lo=out["diff"] - half, hi=out["diff"] + half, df=float(df))


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


def _status(row: dict, reduced_width: bool, reduced_protocol: bool) -> str:
    """The status of a cell made here (``row``: paper, paper_std, diff; mean, std and n for a mean over seeds)."""
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


def _comparison(row: dict) -> tuple[str | None, float | None]:
    """Which comparison the status rests on, in words, and its p-value (Welch only)."""
    if row.get("paper") is None or row.get("paper_std") is None or row["status"].startswith("not comparable"):
        return None, None
    if (row.get("n") or 1) < 2 or not row.get("std"):
        return f"one run: |diff| <= {SPREAD:g} x paper std ({SPREAD * row['paper_std']:.2f})", None
    t, df, p = welch(row["mean"], row["std"], row["n"], row["paper"], row["paper_std"])
    return f"Welch t = {t:.2f}, df = {df:.1f}, p = {p:.3g} (ours n = {row['n']}, paper n = {PAPER_SEEDS})", round(p, 5)
