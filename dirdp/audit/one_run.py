"""Privacy auditing in one training run: Steinke, Nasr & Jagielski (NeurIPS 2023) and, for Gaussian DP, the f-DP
analysis of Mahloujifar, Melis & Chaudhuri (ICML 2025). numpy/scipy only.

m canaries are each included in training independently with probability 1/2. From the released model the auditor
scores every canary, guesses IN for the k_+ highest scores, OUT for the k_- lowest and abstains on the rest:
r = k_+ + k_- guesses, v of them correct. Under (eps, delta)-DP with respect to adding or removing one canary
(Steinke et al., Theorem 5.2 and the p-value code of their appendix)

    P[v or more correct] <= beta + 2 m delta alpha,   p = e^eps / (1 + e^eps),
    beta = P[Binomial(r, p) >= v],   alpha = max_{i=1..v} P[v - i <= Binomial(r, p) < v] / i,

so a p-value below a = 1 - confidence rejects "(eps, delta)-DP", and the largest eps rejected is the lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats


def _check(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> None:
    if not 0 <= v <= r <= m:
        raise ValueError(f"need 0 <= v <= r <= m (correct <= guesses <= canaries). Found m={m}, r={r}, v={v}.")
    if not 0 <= delta <= 1:
        raise ValueError(f"delta must lie in [0, 1]. Found delta={delta}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1). Found confidence={confidence}.")


def p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """min(1, beta + 2 m delta alpha), the probability of v or more correct guesses out of r under (eps, delta)-DP
    (module docstring). beta = binom.sf(v - 1, r, p); alpha's running sums P[v - i <= B < v] are the cumulative sums
    of pmf(v - 1), pmf(v - 2), ..., pmf(0), all i at once. v = 0 gives 1."""
    _check(m, r, v, delta)
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0. Found eps={eps}.")
    p = float(special.expit(eps))
    beta = float(stats.binom.sf(v - 1, r, p))
    if delta == 0 or v == 0:
        return min(1.0, beta)
    below = np.cumsum(stats.binom.pmf(np.arange(v - 1, -1, -1), r, p))  # below[i - 1] = P[v - i <= B < v]
    alpha = float(np.max(below / np.arange(1, v + 1)))
    return min(1.0, beta + 2 * m * delta * alpha)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, *, confidence: float = 0.95) -> float:
    """The largest eps whose (eps, delta)-DP claim the observed v correct of r guesses rejects at level
    a = 1 - confidence: the root of p_value(eps) = a (brentq; the p-value increases with eps), 0 when
    p_value(0) >= a (v <= r/2 among them, r = 0, v = 0). With delta = 0 and v = r, p_value = p^r, so the bound is
    logit(a^(1/r)). Any eps with p_value < a is rejected, so a p-value that fell again past the root would only
    make this bound conservative."""
    _check(m, r, v, delta, confidence)
    a = 1 - confidence

    def gap(eps: float) -> float:
        return p_value(m, r, v, eps, delta) - a

    if gap(0.0) >= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while gap(hi) < 0:  # p -> 1 as eps grows (expit(eps) == 1.0 past eps ~ 37), so this ends
        lo, hi = hi, 2 * hi
    return float(optimize.brentq(gap, lo, hi, xtol=1e-12))


def guesses(scores, included, k_pos: int, k_neg: int) -> tuple[int, int]:
    """(r, v): IN for the k_pos highest scores, OUT for the k_neg lowest, v the guesses that match ``included``.
    Ties: a stable argsort of the scores, so among equal scores the canary with the larger index counts as higher
    (guessed IN first, OUT last): deterministic, and blind to ``included``."""
    s, inc = np.asarray(scores, dtype=float), np.asarray(included)
    if s.ndim != 1 or inc.shape != s.shape or inc.dtype != bool:
        raise ValueError(f"need 1-D scores and a boolean ``included`` of the same length. Found shapes {s.shape} and "
                         f"{inc.shape}, dtype {inc.dtype}.")
    if np.isnan(s).any():
        raise ValueError(f"scores hold {int(np.isnan(s).sum())} NaN(s); a NaN has no rank.")
    if not (k_pos >= 0 and k_neg >= 0 and k_pos + k_neg <= len(s)):
        raise ValueError(f"need k_pos, k_neg >= 0 and k_pos + k_neg <= m. Found {k_pos}, {k_neg}, m={len(s)}.")
    order = np.argsort(s, kind="stable")
    v = int(inc[order[len(s) - k_pos:]].sum()) + int((~inc[order[:k_neg]]).sum())
    return k_pos + k_neg, v


@dataclass(frozen=True)
class OneRunRow:
    """One (k_+, k_-) of the grid: its guesses, correct guesses, accuracy v/r and bound at ``confidence``."""

    k_pos: int
    k_neg: int
    r: int
    v: int
    accuracy: float  # v / r (nan when r = 0)
    eps_lower_bound: float
    confidence: float  # the per-row level, after Bonferroni over the grid


@dataclass(frozen=True)
class OneRunAudit:
    """:func:`audit`'s rows and its best row; ``best.eps_lower_bound`` holds at ``confidence`` for the whole grid."""

    rows: tuple[OneRunRow, ...]
    best: OneRunRow
    m: int
    delta: float
    confidence: float


def audit(scores, included, *, delta: float, ks: Sequence[int | tuple[int, int]],
          confidence: float = 0.95) -> OneRunAudit:
    """Steinke et al.'s audit over a grid fixed in advance. Each k in ``ks`` guesses k - k//2 IN at the top and k//2
    OUT at the bottom (an odd k's extra guess goes IN); a pair (k_pos, k_neg) is taken as it is. Every row's bound is
    at confidence 1 - (1 - confidence)/len(ks) (Bonferroni), so the best row's holds at ``confidence``; the first
    of equal bounds is the best."""
    if len(ks) == 0:
        raise ValueError("ks is empty: give at least one number of guesses.")
    m, level = len(np.asarray(scores)), 1 - (1 - confidence) / len(ks)
    rows = []
    for k in ks:
        k_pos, k_neg = (k - k // 2, k // 2) if np.ndim(k) == 0 else (int(k[0]), int(k[1]))
        r, v = guesses(scores, included, k_pos, k_neg)
        rows.append(OneRunRow(k_pos, k_neg, r, v, v / r if r else math.nan,
                              epsilon_lower_bound(m, r, v, delta, confidence=level), level))
    best = max(rows, key=lambda row: row.eps_lower_bound)
    return OneRunAudit(rows=tuple(rows), best=best, m=m, delta=delta, confidence=confidence)


def fdp_rejects(m: int, r: int, v: int, inverse_blow_up: Callable[[float], float], *,
                confidence: float = 0.95) -> bool:
    """Mahloujifar et al.'s one-run test of an f-DP claim (their ``audit_rh_with_cap``, membership: alphabet k = 2).
    ``inverse_blow_up(y)`` is the least probability an event of probability y in one world keeps in the neighbouring
    one: Phi(Phi^-1(y) - mu) for mu-GDP, max(e^-eps y, 1 - e^eps (1 - y)) for eps-DP. With tau = 1 - confidence,
    start from c = tau v / m (correct-guess mass) and h = tau (r - v) / m (wrong-guess mass) and for i = v-1, ..., 0

        h' = max(h, inverse_blow_up(c)),   c' = c + i/(r - i) (h' - h)

    (wrong guesses must carry at least the inverse blow-up of the correct ones, and outcomes with i correct of r add
    them in the ratio i : r - i). If the least total mass c + h exceeds r/m, the mass r guesses have, then P[v or
    more correct] < tau under the claim: True means the claim is rejected at ``confidence``."""
    _check(m, r, v, 0.0, confidence)
    tau = 1 - confidence
    c, h = tau * v / m, tau * (r - v) / m
    for i in range(v - 1, -1, -1):
        if c + h > r / m:
            break
        h_new = max(h, float(inverse_blow_up(min(c, 1.0))))
        if h_new == h:  # then neither moves again
            break
        c, h = c + i / (r - i) * (h_new - h), h_new
    return c + h > r / m


def gdp_mu_lower_bound(m: int, r: int, v: int, *, confidence: float = 0.95) -> float:
    """The largest mu whose mu-GDP claim :func:`fdp_rejects` rejects for v correct of r guesses (bisection to 1e-9:
    a larger mu blows up less, so the rejected mu form an interval [0, mu*)); 0 when even mu = 0 stands."""
    _check(m, r, v, 0.0, confidence)

    def rejects(mu: float) -> bool:
        return fdp_rejects(m, r, v, lambda y: float(special.ndtr(special.ndtri(y) - mu)), confidence=confidence)

    if not rejects(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while rejects(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-9:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rejects(mid) else (lo, mid)
    return lo


def gdp_epsilon(mu: float, delta: float) -> float:
    """The eps at which mu-GDP is (eps, delta)-DP (Dong, Roth & Su 2022, Corollary 2.13):
    delta = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), solved in logs; 0 when delta(0) <= delta. Of a GDP
    lower bound this is the eps of the rejected Gaussian curve (the paper's "empirical privacy"): a lower bound on
    the mechanism's eps only if its trade-off curve is Gaussian."""
    if not (mu >= 0 and 0 < delta < 1):
        raise ValueError(f"need mu >= 0 and 0 < delta < 1. Found mu={mu}, delta={delta}.")

    def log_gap(eps: float) -> float:
        top, bottom = special.log_ndtr(-eps / mu + mu / 2), special.log_ndtr(-eps / mu - mu / 2)
        return float(top + np.log1p(-np.exp(eps + bottom - top)) - math.log(delta))

    if mu == 0 or log_gap(0.0) <= 0:
        return 0.0
    hi = mu * mu / 2 - mu * float(special.ndtri(delta)) + 1  # Phi(-eps/mu + mu/2) < delta from here on
    return float(optimize.brentq(log_gap, 0.0, hi, xtol=1e-12))
