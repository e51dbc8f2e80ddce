"""The largest membership AUC an (eps, delta)-DP model allows (dirdp.audit.dp_auc_bound), the membership table's
"AUC the claim allows": its closed form against the area under the tradeoff curve by quadrature, reached by
randomized response (the mechanism whose ROC is that curve), and not crossed by the Gaussian mechanism at any
(eps, delta) it satisfies."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from dirdp.audit import dp_auc_bound


def _curve(x: float, eps: float, delta: float) -> float:
    """TPR <= min(1, delta + e^eps x, 1 - e^-eps (1 - delta - x)) at FPR = x."""
    return min(1.0, delta + math.exp(eps) * x, 1 - math.exp(-eps) * (1 - delta - x))


@pytest.mark.parametrize("eps,delta", [(0.0, 0.0), (0.5, 1e-5), (1.0, 1e-5), (2.0, 1e-5), (2.0, 0.1), (8.0, 1e-3)])
def test_the_closed_form_is_the_area_under_the_tradeoff_curve(eps, delta):
    kinks = [(1 - delta) / (math.exp(eps) + 1), 1 - delta]
    area, err = integrate.quad(_curve, 0, 1, args=(eps, delta), points=kinks, epsabs=1e-12, epsrel=1e-12)
    assert dp_auc_bound(eps, delta) == pytest.approx(area, abs=1e-10)


@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0, 2.0, 5.0])
def test_randomized_response_reaches_it(eps):
    """Randomized response reports a member's bit truthfully with probability p = e^eps/(1 + e^eps): it is eps-DP,
    and the AUC of its output (ties 1/2) is P(member 1, non-member 0) + 1/2 P(equal) = p^2 + p(1 - p) = p."""
    p = math.exp(eps) / (1 + math.exp(eps))
    auc_rr = p * p + 0.5 * (p * (1 - p) + (1 - p) * p)
    assert dp_auc_bound(eps, 0.0) == pytest.approx(auc_rr, abs=1e-12)


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 2.0, 3.0])
def test_the_gaussian_mechanism_stays_under_it_at_every_eps_it_satisfies(mu):
    """The Gaussian mechanism with sensitivity / sigma = mu is (eps, delta(eps))-DP for every eps, delta(eps) =
    Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Balle and Wang 2018), and its best membership AUC is
    Phi(mu / sqrt 2): under the bound at every such (eps, delta), and close to it at the tightest one (one
    (eps, delta) pair is a two-piece envelope of the Gaussian's curved tradeoff, so not tight: 0.02 apart at mu = 1)."""
    auc = stats.norm.cdf(mu / math.sqrt(2))
    bounds = []
    for eps in np.linspace(0.0, 4 * mu + mu * mu, 400):
        delta = stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
        bounds.append(dp_auc_bound(float(eps), float(max(delta, 0.0))))
    assert auc <= min(bounds) + 1e-12
    assert min(bounds) - auc < 0.025


def test_its_ends_and_its_direction():
    assert dp_auc_bound(0.0, 0.0) == 0.5
    assert dp_auc_bound(math.inf, 1e-5) == 1.0
    eps = np.linspace(0, 6, 25)
    assert np.all(np.diff([dp_auc_bound(float(e), 1e-5) for e in eps]) > 0)
    assert dp_auc_bound(1.0, 1e-3) > dp_auc_bound(1.0, 1e-5)


@pytest.mark.parametrize("eps,delta", [(-0.1, 1e-5), (math.nan, 1e-5), (1.0, -1e-5), (1.0, 1.0)])
def test_a_claim_that_is_no_claim_is_refused_with_what_was_found(eps, delta):
    with pytest.raises(ValueError, match="need eps >= 0 and 0 <= delta < 1. Found eps="):
        dp_auc_bound(eps, delta)
