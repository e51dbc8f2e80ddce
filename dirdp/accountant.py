"""Privacy accountant of Algorithm 1: Lemma 9, Theorem 10, Lemma 13 and Eq. (1).

Pure numerics (numpy/scipy), vectorised over the RDP order lambda and computed in log
space, so that neither a large order nor a tiny sampling rate q overflows or cancels.

Notation follows the paper: alpha is the Dirichlet offset, r the scale, q the Poisson
sampling rate, T (``steps``) the number of training steps, delta the DP slack.

The admissible orders of Theorem 10 are the integers 2 <= lambda < 1 + alpha / r. That set
is unbounded as r -> 0, so this module also caps the order at ``max_order``. Minimising
over fewer orders can only raise the epsilon it reports, so the cap keeps every answer
conservative; it does decide where the floor lim_{r->0} h(r) lies (see
:func:`epsilon_floor`): with every order admitted that limit is 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

DEFAULT_MAX_ORDER = 256
"""Largest RDP order searched (dp_accounting's default grid also ends at 256 or 512)."""


class InfeasibleEpsilonError(ValueError):
    """The target epsilon is at or below what Theorem 10 can certify for any r > 0."""

    def __init__(self, message: str, *, floor: float, order: int):
        super().__init__(message)
        self.floor = floor
        self.order = order


@dataclass(frozen=True)
class PrivacySpend:
    """An (epsilon, delta) guarantee and the RDP order lambda that attains it."""

    epsilon: float
    order: int
    delta: float


MAX_MAX_ORDER = 10_000
"""Largest ``max_order`` accepted: the accountant builds max_order x max_order tables, so memory grows as its
square (about 3 GiB at 10,000; 80 GB for a single table at 100,000)."""


Q_RULE = ("a sampling rate in (0, 1), where Theorem 10 holds (q = 1, the full batch, is Lemma 9's case: the audit "
          "uses it, Theorem 10 and so training do not)")
"""What q must be, in every message that refuses one (the accountant's, a run config's, the CLI's help): one
interval, (0, 1). The audit's q = 1 claims go through Lemma 9 (:func:`lemma9_epsilon`)."""


def _is_int(x) -> bool:
    """An integer value (int, or a float with no fraction); False for nan, inf and non-numbers."""
    try:
        return math.isfinite(x) and int(x) == x
    except (TypeError, ValueError, OverflowError):
        return False


def _check(*, alpha=None, r=None, q=None, steps=None, delta=None, eps=None, max_order=None):
    """Raise a ValueError that says which argument is out of range and what was found."""
    if alpha is not None and not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0. Found alpha={alpha}.")
    if r is not None and not (0 < r < alpha):
        raise ValueError(f"r must lie in (0, alpha) = (0, {alpha}). Found r={r}.")
    if q is not None and not (0 < q < 1):
        raise ValueError(f"q must be {Q_RULE}. Found q={q}.")
    if steps is not None and not (_is_int(steps) and steps >= 1):
        raise ValueError(f"steps (T) must be an integer >= 1. Found steps={steps}.")
    if delta is not None and not (0 < delta < 1):
        raise ValueError(f"delta must lie in (0, 1). Found delta={delta}.")
    if eps is not None and not (eps > 0):
        raise ValueError(f"eps must be > 0. Found eps={eps}.")
    if eps is not None and math.isinf(eps):
        raise ValueError("eps = inf needs no r: the non-private run adds no noise (train --eps inf trains "
                         "without the mechanism). Ask for a finite eps > 0.")
    if max_order is not None and not (_is_int(max_order) and 2 <= max_order <= MAX_MAX_ORDER):
        raise ValueError(f"max_order must be an integer in [2, {MAX_MAX_ORDER}]: the RDP orders 2..max_order are "
                         f"searched with max_order x max_order tables, whose memory grows as its square (about "
                         f"3 GiB at {MAX_MAX_ORDER}). Found max_order={max_order}.")


def dirichlet_rdp(*, orders, r: float, alpha: float) -> np.ndarray:
    """Lemma 9 (Ponnoprat 2023): RDP of one use of Mechanism 8 on the simplex.

    eps_M(lambda; r) = lambda * r**2 * psi'(alpha - (lambda - 1) r)  for lambda < 1 + alpha/r,

    and +inf for lambda >= 1 + alpha / r. The mask is explicit: ``scipy.special.polygamma``
    is finite at negative non-integers, so the formula alone would be silently wrong there.
    ``r = 0`` is accepted (the limit r -> 0, where the mechanism ignores its input): 0.
    """
    orders = np.asarray(orders, dtype=np.float64)
    arg = alpha - (orders - 1.0) * r
    out = np.full(orders.shape, np.inf)
    ok = arg > 0
    out[ok] = orders[ok] * r * r * special.polygamma(1, arg[ok])
    return out


def _log_expm1(x: np.ndarray) -> np.ndarray:
    """log(exp(x) - 1) for x >= 0, without overflow for large x (-inf at x = 0)."""
    x = np.asarray(x, dtype=np.float64)
    big = x > 30.0
    with np.errstate(divide="ignore"):
        small = np.log(np.expm1(np.where(big, 0.0, x)))
    return np.where(big, x + np.log1p(-np.exp(-np.where(big, x, 1.0))), small)


def subsampled_rdp(*, orders, r: float, alpha: float, q: float) -> np.ndarray:
    """Theorem 10, one step: RDP of Mechanism 8 on a Poisson q-subsample (Zhu & Wang 2019, Thm 5).

    eps_sub(lambda) <= 1/(lambda-1) log B(lambda), with, for integer lambda >= 2,

        B = (1-q)^(lambda-1) (q lambda - q + 1) + C(lambda,2) q^2 (1-q)^(lambda-2) e^{eps_M(2)}
            + 3 sum_{j=3}^{lambda} C(lambda,j) (1-q)^(lambda-j) q^j e^{(j-1) eps_M(j)}.

    Evaluated exactly in log space. With p_j = C(lambda,j) q^j (1-q)^(lambda-j) the binomial
    pmf, the first term is p_0 + p_1 and the p_j sum to one, so

        B - 1 = p_2 (e^{eps_M(2)} - 1) + sum_{j>=3} p_j (3 e^{(j-1) eps_M(j)} - 1),

    a sum of non-negative terms whose log is a log-sum-exp; log B = log1p(B - 1). This keeps
    full relative precision when B - 1 is tiny (small q) and cannot overflow when it is huge.
    Orders outside Lambda(r) (lambda >= 1 + alpha/r) get +inf.
    """
    lam = np.atleast_1d(np.asarray(orders, dtype=np.int64))
    if np.any(lam < 2):
        raise ValueError(f"Theorem 10 needs integer orders >= 2. Found {lam[lam < 2].tolist()}.")
    top = int(lam.max())
    j = np.arange(2, top + 1, dtype=np.float64)
    a = (j - 1.0) * dirichlet_rdp(orders=j, r=r, alpha=alpha)  # (j-1) eps_M(j)
    log_weight = np.where(j == 2, _log_expm1(a), a + np.log(3.0 - np.exp(-a)))
    lamf = lam[:, None].astype(np.float64)
    with np.errstate(invalid="ignore"):
        log_pmf = (
            special.gammaln(lamf + 1)
            - special.gammaln(j + 1)
            - special.gammaln(np.maximum(lamf - j, 0) + 1)
            + j * math.log(q)
            + (lamf - j) * math.log1p(-q)
        )
        terms = np.where(j[None, :] <= lamf, log_pmf + log_weight[None, :], -np.inf)
    top_term = terms.max(axis=1, keepdims=True)
    shift = np.where(np.isfinite(top_term), top_term, 0.0)
    with np.errstate(divide="ignore"):
        log_excess = (shift + np.log(np.exp(terms - shift).sum(axis=1, keepdims=True)))[:, 0]
    out = np.logaddexp(0.0, log_excess) / (lam - 1.0)
    out[~np.isfinite(a[lam - 2])] = np.inf
    return out.reshape(np.shape(orders)) if np.ndim(orders) else out


def rdp_to_dp(*, orders, rdp, delta: float) -> np.ndarray:
    """Lemma 13 (Canonne, Kamath & Steinke 2020): (lambda, rdp)-RDP implies (eps, delta)-DP,

    eps = rdp + log(lambda - 1) - (log(delta) + lambda log(lambda)) / (lambda - 1).
    """
    lam = np.asarray(orders, dtype=np.float64)
    return rdp + np.log(lam - 1.0) - (math.log(delta) + lam * np.log(lam)) / (lam - 1.0)


def admissible_orders(*, r: float, alpha: float, max_order: int = DEFAULT_MAX_ORDER) -> np.ndarray:
    """Lambda(r) of Section 3.4 capped at ``max_order``: integers 2 <= lambda < 1 + alpha/r."""
    lam = np.arange(2, max_order + 1)
    return lam[alpha - (lam - 1) * r > 0]


def _epsilon_by_order(orders, *, r, alpha, q, steps, delta) -> np.ndarray:
    """Theorem 10 in full: T steps composed (Lemma 12) and converted by Lemma 13."""
    rdp = steps * subsampled_rdp(orders=orders, r=r, alpha=alpha, q=q)
    return rdp_to_dp(orders=orders, rdp=rdp, delta=delta)


def _best(orders, eps_by_order, delta) -> PrivacySpend:
    i = int(np.argmin(eps_by_order))
    return PrivacySpend(epsilon=float(eps_by_order[i]), order=int(orders[i]), delta=delta)


def epsilon(
    *, r: float, alpha: float, q: float, steps: int, delta: float, max_order: int = DEFAULT_MAX_ORDER
) -> PrivacySpend:
    """h(r) of Section 3.4: the epsilon that Theorem 10 certifies for T steps of Algorithm 1,

    h(r) = min over lambda in Lambda(r) of eps_o(lambda, delta; r), with the order that attains it.

    What it covers: the T released Dirichlet samples, not the trained model (see :mod:`dirdp.audit`).
    """
    _check(alpha=alpha, r=r, q=q, steps=steps, delta=delta, max_order=max_order)
    orders = admissible_orders(r=r, alpha=alpha, max_order=max_order)
    return _best(orders, _epsilon_by_order(orders, r=r, alpha=alpha, q=q, steps=steps, delta=delta), delta)


def epsilon_floor(
    *, alpha: float, q: float, steps: int, delta: float, max_order: int = DEFAULT_MAX_ORDER
) -> PrivacySpend:
    """lim_{r->0} h(r): no r > 0 certifies an epsilon at or below this value (h is increasing).

    As r -> 0, eps_M -> 0 and every order up to ``max_order`` becomes admissible, so the limit
    is min over 2 <= lambda <= max_order of eps_o(lambda, delta; 0) with
    B - 1 = 2 P[Binomial(lambda, q) >= 3]. That term, the factor 3 of Theorem 10, keeps the
    limit positive for a finite cap. It falls to 0 as ``max_order`` grows: for lambda >> T,
    T log(B)/(lambda-1) <= T log(3)/(lambda-1) -> 0 and Lemma 13's term -> 0 too; any eps > 0
    is then reachable, with a vanishing r and orders of the order of T or more.
    """
    _check(alpha=alpha, q=q, steps=steps, delta=delta, max_order=max_order)
    orders = np.arange(2, max_order + 1)
    return _best(orders, _epsilon_by_order(orders, r=0.0, alpha=alpha, q=q, steps=steps, delta=delta), delta)


def epsilon_at_order(*, r: float, alpha: float, q: float, steps: int, delta: float, order: int) -> float:
    """eps_o(lambda, delta; r): Theorem 10 at ONE order lambda, composed over T steps and converted by Lemma 13;
    +inf where lambda >= 1 + alpha/r. Any integer order >= 2 (no cap: the work is one row of lambda terms), for
    what :func:`epsilon` and :func:`epsilon_floor`, which search orders up to a cap, cannot reach. ``r = 0`` gives
    the limit r -> 0 at that order."""
    _check(alpha=alpha, q=q, steps=steps, delta=delta)
    if not (_is_int(order) and order >= 2):
        raise ValueError(f"order must be an integer >= 2. Found order={order}.")
    if not (0 <= r < alpha):
        raise ValueError(f"r must lie in [0, alpha) = [0, {alpha}). Found r={r}.")
    orders = np.array([int(order)])
    return float(_epsilon_by_order(orders, r=r, alpha=alpha, q=q, steps=steps, delta=delta)[0])


def lemma9_epsilon(*, r: float, alpha: float, steps: int, delta: float) -> tuple[float, int]:
    """(eps, order) for T = ``steps`` un-subsampled (q = 1) uses of Mechanism 8: Lemma 9's RDP composed
    (T eps_M(lambda; r)) and converted by Lemma 13, minimised over the admissible orders (capped at 256)."""
    orders = admissible_orders(r=r, alpha=alpha)
    if not len(orders):
        raise ValueError(f"no admissible RDP order for r={r}, alpha={alpha}.")
    eps = rdp_to_dp(orders=orders, rdp=steps * dirichlet_rdp(orders=orders, r=r, alpha=alpha), delta=delta)
    i = int(np.argmin(eps))
    return float(eps[i]), int(orders[i])


def rstar(
    *, eps: float, alpha: float, q: float, steps: int, delta: float, max_order: int = DEFAULT_MAX_ORDER
) -> float:
    """Eq. (1): r* = sup{r in (0, alpha) : h(r) <= eps}, found with Brent's method.

    h is continuous and strictly increasing on (0, alpha) (each eps_o(lambda; r) increases with r
    and Lambda(r) shrinks only where the dropped order's value has already diverged), with
    h -> inf as r -> alpha and h -> :func:`epsilon_floor` as r -> 0. The root is bracketed by
    halving r from alpha/2 (cheap: few orders are admissible at large r), polished by Brent
    to ~1e-15, and then made **conservative**: the r returned always satisfies h(r) <= eps.

    Raises InfeasibleEpsilonError (a ValueError) naming the floor when eps <= floor.

    What it covers: the T released Dirichlet samples, not the trained model (see :mod:`dirdp.audit`).
    """
    _check(alpha=alpha, q=q, steps=steps, delta=delta, eps=eps, max_order=max_order)
    floor = epsilon_floor(alpha=alpha, q=q, steps=steps, delta=delta, max_order=max_order)
    if eps <= floor.epsilon:
        raise InfeasibleEpsilonError(
            f"eps={eps} cannot be certified: with alpha={alpha}, q={q:.6g}, T={steps}, "
            f"delta={delta:g} and RDP orders up to {max_order}, Theorem 10 gives "
            f"eps > {floor.epsilon:.6f} for every r > 0 (the limit r -> 0, at order "
            f"lambda={floor.order}). Ask for eps > {floor.epsilon:.6f}, or use fewer steps or a "
            f"smaller q; a larger max_order lowers the floor only at a vanishing r"
            + (" (here the floor sits at the largest order searched, so raising max_order lowers it)."
               if floor.order == max_order else "."),
            floor=floor.epsilon,
            order=floor.order,
        )

    def gap(r: float) -> float:
        return epsilon(r=r, alpha=alpha, q=q, steps=steps, delta=delta, max_order=max_order).epsilon - eps

    hi, lo = alpha, alpha / 2.0
    while gap(lo) > 0:
        hi, lo = lo, lo / 2.0
        if lo < 1e-300:  # unreachable for eps > floor; guards against a broken invariant
            raise RuntimeError(f"no r in (0, {alpha}) reaches eps={eps}; floor={floor.epsilon}")
    if hi == alpha:
        hi = math.nextafter(alpha, 0.0)
        if gap(hi) <= 0:  # a budget so large that every representable r < alpha meets it
            return hi
    root = optimize.brentq(gap, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    step = 1e-15
    while gap(root) > 0:  # Brent may land a hair above the crossing: step back below it
        root = max(lo, root - step)
        step *= 2.0
    return root


def calibrate(
    *, eps: float, alpha: float, q: float, steps: int, delta: float, max_order: int = DEFAULT_MAX_ORDER
) -> tuple[float, PrivacySpend]:
    """r* of Eq. (1) for ``eps`` and what Theorem 10 certifies at it: (r*, h(r*)), h(r*).epsilon <= eps.

    What it covers: the T released Dirichlet samples, not the trained model (see :mod:`dirdp.audit`).
    """
    r = rstar(eps=eps, alpha=alpha, q=q, steps=steps, delta=delta, max_order=max_order)
    return r, epsilon(r=r, alpha=alpha, q=q, steps=steps, delta=delta, max_order=max_order)
