"""The control with power: DP-SGD audited where its own guarantee speaks (every update) with the most powerful test
there is for the canary problem's pair of worlds, against DP-SGD's own epsilon.

A control that finds nothing says nothing unless it could have found something. Here DP-SGD is set to the claimed
epsilon by Opacus' RDP accountant (the audit's one calibration), trained on the canary audit's problem
(:func:`dirdp.audit.canary.canary_problem`: D' orthogonal to the canary direction u, the canary's gradient large),
and tested with the log-likelihood ratio of the updates' projections on u (:func:`dirdp.audit.canary._update_llr`,
summed over the steps in :func:`dirdp.audit.canary.train_linear_trials`). A sound audit with power finds
0 < lower bound <= DP-SGD's own epsilon (:func:`gaussian_exact_epsilon`) <= the claim; not a tight one.
"""

from __future__ import annotations

import math
import time

from dirdp import methods
from dirdp.audit.canary import CANARY_MODEL, CanaryProblem, _noise_for, train_linear_trials


def gaussian_exact_epsilon(noise_multiplier: float, *, q: float, steps: int, delta: float) -> tuple[float, str]:
    """DP-SGD's epsilon as tight as it is known: at q = 1 and one step, the Gaussian mechanism's exact epsilon (Balle
    and Wang 2018: the eps with Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) = delta, mu = 1/sigma); otherwise
    Opacus' PRV accountant (numerical composition of the privacy-loss distribution, within its eps_error of 0.01).
    No audit of a correctly implemented DP-SGD can certify more."""
    from scipy import optimize, stats

    if q >= 1 and steps == 1:
        mu = 1.0 / noise_multiplier

        def gap(eps):
            return stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) - delta

        return float(optimize.brentq(gap, 0.0, 100.0)), "Gaussian mechanism, exact (Balle and Wang 2018)"
    import warnings

    import numpy as np
    from opacus.accountants import PRVAccountant

    acc = PRVAccountant()
    acc.history = [(noise_multiplier, q, steps)]
    with warnings.catch_warnings(), np.errstate(divide="ignore"):  # its log(0) at the grid's end is harmless
        warnings.simplefilter("ignore")
        return float(acc.get_epsilon(delta=delta, eps_error=0.01)), "Opacus PRV accountant (within 0.01)"


def dpsgd_control(problem: CanaryProblem, *, q: float, steps: int, eps: float, trials: int, delta: float = 1e-5,
                  lr: float = 0.1, max_grad_norm: float = 1.0, seed: int = 0) -> dict:
    """The control with power: DP-SGD at the noise multiplier Opacus' RDP accountant calibrates for (``eps``,
    delta) at (q, T = ``steps``), audited by the adversary DP-SGD's own guarantee covers (every update) with the most
    powerful statistic there is for this pair of worlds (``likelihood``: :func:`_update_llr` summed over the steps).
    The canary's gradient is large (clipped to C at almost every step) and orthogonal to D's, so the audit sees
    nearly all of what DP-SGD lets through. A sound audit with power finds 0 < lower bound <= the mechanism's own
    epsilon (:func:`gaussian_exact_epsilon`) <= the claim. Held-out thresholding as every other row."""
    from dirdp.audit.stats import audit_threshold

    t0 = time.perf_counter()
    noise = _noise_for(methods.DPSGD, eps=eps, q=q, steps=steps, delta=delta)
    kw = dict(method=methods.DPSGD, q=q, steps=steps, trials=trials, lr=lr, noise_multiplier=noise.noise_multiplier,
              max_grad_norm=max_grad_norm)
    worlds = {w: train_linear_trials(problem, with_canary=bool(w), seed=2 * seed + w + 7919, **kw) for w in (0, 1)}
    lb, thr = audit_threshold(worlds[0]["likelihood"], worlds[1]["likelihood"], delta=delta)
    exact, how = gaussian_exact_epsilon(noise.noise_multiplier, q=q, steps=steps, delta=delta)
    return dict(method=methods.DPSGD, model=CANARY_MODEL, q=q, T=steps, guarantee=f"central ({eps:g}, {delta:g})-DP",
                claimed_eps=eps, certified_eps=noise.certified_eps,
                mechanism=f"sigma={noise.noise_multiplier:.4f}, C={max_grad_norm:g}",
                statistic="likelihood", adversary_sees="every update", eps_lower_bound=lb.epsilon,
                mechanism_eps=exact, mechanism_eps_by=how, fpr=lb.fpr, fnr=lb.fnr, fpr_upper=lb.fpr_upper,
                fnr_upper=lb.fnr_upper, trials_per_world=trials, held_out_per_world=lb.n_negatives,
                confidence=lb.confidence, threshold=thr, n_dprime=len(problem.y),
                wall_time_s=round(time.perf_counter() - t0, 1))
