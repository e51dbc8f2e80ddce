"""The rows of the subspace canary test (:func:`workflow.audit.subspace.subspace_residuals`' output): per (method,
adjacency), one row per statistic ("every update": max_t rho_t; "final model": theta_T - theta_0 outside S_0 + S_T;
at T = 1 the one update is the final model and its statistic is exact), each faced with the claim for its own
adjacency (:func:`workflow.audit.claims.matched_claim`) and its verdict.
"""

from __future__ import annotations

import math

import torch

from dirdp.audit.stats import audit_threshold, epsilon_lower_bound
from workflow.audit.claims import matched_claim, verdict

EVERY_UPDATE = "every update"
FINAL_MODEL = "final model"
STATISTICS = {EVERY_UPDATE: "max_t ||P_perp(S_t) update_t||",
              FINAL_MODEL: "||P_perp(S_0 + S_T)(theta_T - theta_0)||"}


def _quantiles(prefix: str, values: torch.Tensor) -> dict:
    qs = torch.quantile(values, torch.tensor([0.0, 0.5, 1.0], dtype=values.dtype)).tolist()
    return {f"{prefix}_min": qs[0], f"{prefix}_median": qs[1], f"{prefix}_max": qs[2]}


def _views(v: dict, steps: int) -> list[tuple[str, str, str, str]]:
    """(adversary_sees, statistic, statistic key, relative key) of the statistics computed for one (method,
    adjacency)."""
    every = not bool(torch.isnan(v["world0"]).any())
    if steps == 1 and every:  # the one update is the final model; S_0 alone makes its statistic exact
        return [(FINAL_MODEL, "||P_perp(S_0)(theta_1 - theta_0)|| (T = 1: the one update)", "world", "rel")]
    views = [(EVERY_UPDATE, STATISTICS[EVERY_UPDATE], "world", "rel")] if every else []
    return views + [(FINAL_MODEL, STATISTICS[FINAL_MODEL], "final", "final_rel")]


def audit_rows(res: dict) -> list[dict]:
    """One row per (method, adjacency, statistic): the held-out epsilon lower bound (Clopper-Pearson, 95%) at the
    matched claim's delta, the trial-count ceiling (the bound with no error on the held-out half: the most these
    trials can show), ``exact_bound``: for q < 1 what the never-sampled event alone proves for a statistic that is 0
    without the canary (:func:`never_sampled_bound`: P_D'(S) <= e^eps P_D(S) + delta, S = {statistic = 0}; the other
    direction, P_D(not S) <= e^eps P_D'(not S) + delta, admits no finite eps at all while delta < 1 - (1 - q)^T,
    ``no_finite_eps_below_delta``: exact where world 0's statistic is 0 in exact arithmetic, i.e. Algorithm 1's
    every-update statistic and its one-step final model; unbounded at q = 1; NaN for every other row), the
    statistic's quantiles in both worlds, the claim for the row's adjacency and the verdict against it. ``claimed_eps`` stays what
    Algorithm 1's accountant gives at (q, T) (Theorem 10; Lemma 9 + 13 at q = 1), whatever the adjacency."""
    from dirdp.audit.canary import never_sampled_bound

    rows = []
    for key, v in res.items():
        if not isinstance(key, tuple):
            continue
        method, adjacency = key
        c = res["claims"][method]
        m = matched_claim(method, adjacency, q=c.q, eps=c.eps, certified=c.certified, delta=c.delta,
                          accountant=c.accountant)
        delta = m.delta if m.finite else c.delta
        for sees, statistic, stat, rel in _views(v, c.steps):
            w0, w1, r0, r1 = v[f"{stat}0"], v[f"{stat}1"], v[f"{rel}0"], v[f"{rel}1"]
            # thresholds halfway in log10: the statistic spans many orders of magnitude (round-off vs signal)
            lb, thr = audit_threshold(w0.clamp_min(1e-300).log10(), w1.clamp_min(1e-300).log10(), delta=delta)
            ceiling = epsilon_lower_bound(false_positives=0, n_negatives=lb.n_negatives, false_negatives=0,
                                          n_positives=lb.n_positives, delta=delta).epsilon
            # exact only where world 0's statistic is 0 in exact arithmetic (as no_finite_eps_below_delta below)
            exact = ((math.inf if c.q >= 1 else never_sampled_bound(q=c.q, steps=c.steps, delta=delta))
                     if c.dirichlet and stat == "world" else math.nan)
            trials = res["trials"]
            rows.append(dict(
                method=method, model=res["model"], width=res["width"], norm=res["norm"], adjacency=adjacency, q=c.q,
                T=c.steps, paper_eps=c.paper_eps,
                claimed_eps=c.eps, claimed_by=c.accountant if c.dirichlet else "alg1's claim at this (q, T)",
                certified_eps=c.certified, lr=c.lr,
                mechanism=c.mechanism + (f", C={res['max_grad_norm']:g}" if not c.dirichlet else ""),
                statistic=statistic, adversary_sees=sees,
                matched_claim_eps=m.eps, matched_claim_delta=m.delta, matched_claim_by=m.by,
                trials_per_world=trials, held_out_per_world=lb.n_negatives, eps_lower_bound=lb.epsilon,
                ceiling=ceiling, exact_bound=exact,
                fpr=lb.fpr, fnr=lb.fnr, fpr_upper=lb.fpr_upper, fnr_upper=lb.fnr_upper, threshold=10.0 ** thr,
                **_quantiles("res0", w0), **_quantiles("res1", w1),
                rel0_median=float(r0.median()), rel1_median=float(r1.median()),
                canary_sampled_fraction=float(v["sampled1"].double().mean()), n_records=len(res["problem"].y),
                n_params=res["n_params"], span_dim=res["span_dim"],
                span_time_per_trial_s=res["span_time_s"] / max(trials, 1),
                step_time_per_trial_s=v["step_time_s"] / max(trials, 1), wall_time_s=round(res["wall_time_s"], 1),
                # exact where world 0's statistic is 0 in exact arithmetic: Algorithm 1's every-update statistic (at
                # T = 1 also its final model); the event "statistic != 0" then has probability 0 without the canary
                no_finite_eps_below_delta=(-math.expm1(c.steps * math.log1p(-c.q)) if c.q < 1 else 1.0)
                if c.dirichlet and stat == "world" else math.nan,
                verdict=verdict(lb.epsilon, m.eps, ceiling)))
    return rows
