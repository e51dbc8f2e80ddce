"""Tables 6 and 7 recomputed with the accountant, beside the paper's printed values.

Each row holds our r* (Eq. 1), the paper's value, their difference at the paper's precision,
and the epsilon that Theorem 10 certifies for the paper's printed r* (so a reader can see
whether the printed value keeps the budget). ``status`` is a key (:data:`workflow.report.labels.RSTAR_STATUSES`):
match, differs, not_in_paper (a "—" cell that is feasible), infeasible (eps at or below the floor: ``floor``).
"""

from __future__ import annotations

import pandas as pd

from dirdp import accountant
from dirdp.presets import PRESETS, TABLE6_RSTAR, TABLE7_EPS, TABLE7_RSTAR, Preset


def _cell(p: Preset, eps: float, alpha: float, paper_r: float | None, decimals: int) -> dict:
    floor = accountant.epsilon_floor(alpha=alpha, q=p.q, steps=p.steps, delta=p.delta)
    row = dict(dataset=p.name, alpha=alpha, eps=eps, delta=p.delta, q=p.q, steps=p.steps,
               floor=floor.epsilon, paper_rstar=paper_r)
    if eps <= floor.epsilon:
        row.update(rstar=None, order=None, certified_eps=None, diff=None, status="infeasible")  # eps <= floor
    else:
        r, spend = accountant.calibrate(eps=eps, alpha=alpha, q=p.q, steps=p.steps, delta=p.delta)
        rounded = round(r, decimals)
        row.update(rstar=r, order=spend.order, certified_eps=spend.epsilon)
        if paper_r is None:
            row.update(diff=None, status="not_in_paper")
        else:
            row.update(diff=round(rounded - paper_r, decimals),
                       status="match" if rounded == paper_r else "differs")
    row["eps_at_paper_rstar"] = (
        None if paper_r is None
        else accountant.epsilon(r=paper_r, alpha=alpha, q=p.q, steps=p.steps, delta=p.delta).epsilon
    )
    return row


def table7() -> pd.DataFrame:
    """Table 7 (Appendix D.2): r* at alpha = 3, delta = 1e-5 for every data set and every eps
    column of the table, including the cells the paper leaves blank ("—")."""
    rows = []
    for name, printed in TABLE7_RSTAR.items():
        p = PRESETS[name]
        for eps in sorted(set(TABLE7_EPS) | set(printed)):
            rows.append(_cell(p, eps, p.alpha, printed.get(eps), decimals=3))
    return pd.DataFrame(rows)


def table6() -> pd.DataFrame:
    """Table 6 (Appendix C.1): r* and r*/alpha for CIFAR10 at eps = 1 over alpha."""
    p = PRESETS["cifar10"]
    df = pd.DataFrame([_cell(p, 1.0, a, r, decimals=4) for a, r in TABLE6_RSTAR.items()])
    df["rstar_over_alpha"] = df["rstar"] / df["alpha"]
    return df
