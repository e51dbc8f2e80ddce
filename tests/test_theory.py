"""Theorem 11 (Eqs. 3-6) and Appendix C.1: exact checks, then Monte Carlo with the mechanism."""

import numpy as np
import pytest
import torch
from scipy import integrate, special, stats

from dirdp import accountant, theory
from dirdp.presets import PRESETS


@pytest.mark.parametrize("s_y,r,alpha,d", [(0.9, 0.277, 3.0, 10), (0.2, 0.0087, 0.1, 10), (0.5, 2.0, 1.0, 7)])
def test_eq4_and_eq5_equal_the_beta_marginal_moments_by_quadrature(s_y, r, alpha, d):
    # p~_y ~ Beta(r s_y + alpha, r (1 - s_y) + (d - 1) alpha): integrate -log x and its square
    a = r * s_y + alpha
    b = r + d * alpha - a
    dist = stats.beta(a, b)

    def moment(k):
        return integrate.quad(lambda x: (-np.log(x)) ** k * dist.pdf(x), 0, 1, limit=400, points=[1e-12, 1e-6])[0]

    m1, m2 = moment(1), moment(2)
    assert theory.expected_loss(s_y=s_y, r=r, alpha=alpha, d=d) == pytest.approx(m1, rel=1e-6)
    assert theory.loss_variance(s_y=s_y, r=r, alpha=alpha, d=d) == pytest.approx(m2 - m1**2, rel=1e-5)


def test_gradient_of_eq4_is_kappa_times_the_cross_entropy_gradient():
    # d F / d z_j by central differences through softmax equals kappa (s_j - delta_yj)
    z = np.array([0.3, -1.2, 2.0, 0.1, -0.4])
    y, r, alpha, d, h = 2, 0.5, 0.7, 5, 1e-6

    def F(zz):
        s = special.softmax(zz)
        return theory.expected_loss(s_y=s[y], r=r, alpha=alpha, d=d)

    s = special.softmax(z)
    fd = np.array([(F(z + h * e) - F(z - h * e)) / (2 * h) for e in np.eye(d)])
    k = theory.kappa(s_y=s[y], r=r, alpha=alpha)
    np.testing.assert_allclose(fd, k * (s - np.eye(d)[y]), rtol=1e-7, atol=1e-10)


def test_effective_learning_rate_is_lr_times_kappa():
    k = theory.kappa(s_y=0.9, r=0.2349, alpha=3.0)
    assert theory.effective_lr(lr=0.1, s_y=0.9, r=0.2349, alpha=3.0) == pytest.approx(0.1 * k)
    assert 0 < k < 1


@pytest.mark.parametrize("regime,alpha,r", [("small", 1e-5, 0.08e-5), ("large", 1e6, 0.18e3), ("large", 1e6, 0.08e6)])
def test_appendix_c1_regimes_are_the_limits(regime, alpha, r):
    s_y, d = 0.9, 10
    k = theory.kappa(s_y=s_y, r=r, alpha=alpha)
    v = theory.loss_variance(s_y=s_y, r=r, alpha=alpha, d=d)
    assert k / theory.asymptotic_kappa(s_y=s_y, r=r, alpha=alpha, regime=regime) == pytest.approx(1, rel=1e-3)
    assert v / theory.asymptotic_variance(s_y=s_y, r=r, alpha=alpha, d=d, regime=regime) == pytest.approx(1, rel=1e-3)
    with pytest.raises(ValueError, match="regime"):
        theory.asymptotic_kappa(s_y=s_y, r=r, alpha=alpha, regime="medium")


def test_rstar_grows_like_alpha_then_like_sqrt_alpha():
    # Appendix C.1 takes r* = c alpha throughout; Eq. (1) gives slope 1 in log-log only for small
    # alpha and slope 1/2 for large alpha, so kappa ~ alpha^-1/2 there instead of a constant.
    p = PRESETS["cifar10"]

    def rs(alpha):
        return accountant.rstar(eps=1.0, alpha=alpha, q=p.q, steps=p.steps, delta=p.delta)

    small = np.log(rs(1e-3) / rs(1e-4)) / np.log(10)
    large = np.log(rs(1e5) / rs(1e4)) / np.log(10)
    assert small == pytest.approx(1.0, abs=1e-3)
    assert large == pytest.approx(0.5, abs=0.01)
    k = [theory.kappa(s_y=0.9, r=rs(a), alpha=a) for a in (1e4, 1e5)]
    assert np.log(k[1] / k[0]) / np.log(10) == pytest.approx(-0.5, abs=0.01)


@pytest.mark.parametrize("d,alpha,s_y", [(10, 0.1, 0.9), (7, 3.0, 0.2), (10, 10.0, 0.5)])
def test_monte_carlo_agrees_with_theorem_11(d, alpha, s_y):
    g = torch.Generator().manual_seed(11)
    rows = theory.monte_carlo_check(s_y=s_y, r=0.08 * alpha, alpha=alpha, d=d, draws=100_000, generator=g)
    assert len(rows) == 2 + d
    z = np.array([row["z"] for row in rows])
    assert np.all(np.abs(z) < 4.5), rows  # Bonferroni over the statistics of the whole test


def test_monte_carlo_detects_a_wrong_kappa():
    # power check: the same estimates are far (in SEs) from a gradient 10% off Theorem 11
    g = torch.Generator().manual_seed(5)
    rows = theory.monte_carlo_check(s_y=0.9, r=0.277, alpha=3.0, d=10, draws=100_000, generator=g)
    grads = [row for row in rows if row["coord"] >= 0]
    z_wrong = [(row["estimate"] - 1.1 * row["theory"]) / row["se"] for row in grads]
    assert max(abs(v) for v in z_wrong) > 10
