"""Accountant: Lemma 9, Theorem 10, Lemma 13, h(r), r* (Eq. 1) and the floor lim_{r->0} h(r)."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dirdp import accountant as acc
from dirdp.presets import PRESETS

mpmath.mp.dps = 50
DELTA = 1e-5


def mp_theorem10_bracket(lam: int, r, alpha, q):
    """Theorem 10's bracket exactly as printed, summed term by term in 50-digit arithmetic."""
    r, alpha, q = mpmath.mpf(r), mpmath.mpf(alpha), mpmath.mpf(q)

    def eps_m(j):  # Lemma 9
        return j * r**2 * mpmath.psi(1, alpha - (j - 1) * r)

    total = (1 - q) ** (lam - 1) * (q * lam - q + 1)
    total += mpmath.binomial(lam, 2) * q**2 * (1 - q) ** (lam - 2) * mpmath.e ** eps_m(2)
    for j in range(3, lam + 1):
        total += 3 * mpmath.binomial(lam, j) * (1 - q) ** (lam - j) * q**j * mpmath.e ** ((j - 1) * eps_m(j))
    return total


def mp_epsilon(lam, r, alpha, q, steps, delta):
    """Theorem 10 + Lemma 13 at one order, in 50-digit arithmetic."""
    lam_ = mpmath.mpf(lam)
    rdp = steps * mpmath.log(mp_theorem10_bracket(lam, r, alpha, q)) / (lam_ - 1)
    return rdp + mpmath.log(lam_ - 1) - (mpmath.log(delta) + lam_ * mpmath.log(lam_)) / (lam_ - 1)


def mp_h(r, alpha, q, steps, delta):
    """h(r) by brute force in 50-digit arithmetic over all admissible orders."""
    orders = [lam for lam in range(2, 400) if (lam - 1) * mpmath.mpf(r) < alpha]
    return min(mp_epsilon(lam, r, alpha, q, steps, delta) for lam in orders)


# --- Lemma 9 -------------------------------------------------------------------------------

def test_dirichlet_rdp_matches_lemma9_inside_and_is_inf_outside():
    r, alpha = 0.5, 1.2  # admissible orders: lambda < 1 + alpha / r = 3.4
    orders = np.array([1, 2, 3, 4, 5])
    got = acc.dirichlet_rdp(orders=orders, r=r, alpha=alpha)
    want = orders[:3] * r**2 * special.polygamma(1, alpha - (orders[:3] - 1) * r)
    np.testing.assert_allclose(got[:3], want, rtol=1e-15)
    # polygamma(1, .) is finite at negative non-integers (here 1.2 - 3*0.5 = -0.3): must be inf
    assert np.isfinite(special.polygamma(1, alpha - 3 * r))
    assert np.all(np.isinf(got[3:]))


def test_boundary_order_is_excluded():
    # 1 + alpha/r = 4 exactly: lambda = 4 is not admissible (psi' has its pole there)
    assert acc.admissible_orders(r=1.0, alpha=3.0).tolist() == [2, 3]
    assert np.isinf(acc.dirichlet_rdp(orders=[4], r=1.0, alpha=3.0)[0])


# --- Theorem 10 against independent implementations ---------------------------------------

GRID = [  # (q, r, alpha, lambda)
    (0.005, 0.235, 3.0, 2), (0.005, 0.235, 3.0, 12), (0.005, 0.1, 3.0, 29), (250 / 60000, 0.277, 3.0, 10),
    (0.01, 0.02, 0.3, 14), (0.2, 0.3, 10.0, 33), (0.5, 1.0, 3.0, 3), (1e-6, 0.01, 3.0, 250),
    (1e-9, 0.5, 3.0, 6), (0.04, 0.01, 3.0, 200),
]


@pytest.mark.parametrize("q,r,alpha,lam", GRID)
def test_subsampled_rdp_matches_50_digit_theorem10(q, r, alpha, lam):
    got = acc.subsampled_rdp(orders=[lam], r=r, alpha=alpha, q=q)[0]
    want = mpmath.log(mp_theorem10_bracket(lam, r, alpha, q)) / (lam - 1)
    assert got == pytest.approx(float(want), rel=1e-11, abs=1e-300)
    assert got > 0


@pytest.mark.parametrize("q,r,alpha,lam", [g for g in GRID if g[3] <= 51 and g[0] >= 1e-6])
def test_subsampled_rdp_matches_autodp_general_upperbound(q, r, alpha, lam):
    from autodp import rdp_acct

    def rdp(x):
        return float(acc.dirichlet_rdp(orders=[x], r=r, alpha=alpha)[0])

    # autodp returns the log of the bracket (exact for lambda <= 51); divide by lambda - 1
    want = rdp_acct.general_upperbound(rdp, lam, q) / (lam - 1)
    got = acc.subsampled_rdp(orders=[lam], r=r, alpha=alpha, q=q)[0]
    assert got == pytest.approx(want, rel=1e-9)


def test_vectorised_orders_equal_one_at_a_time():
    orders = np.arange(2, 60)
    together = acc.subsampled_rdp(orders=orders, r=0.04, alpha=3.0, q=0.005)
    alone = [acc.subsampled_rdp(orders=[o], r=0.04, alpha=3.0, q=0.005)[0] for o in orders]
    np.testing.assert_allclose(together, alone, rtol=1e-13)


def test_no_overflow_at_large_order_or_tiny_q():
    big = acc.subsampled_rdp(orders=[20000], r=1e-4, alpha=3.0, q=0.005)[0]
    tiny = acc.subsampled_rdp(orders=[2, 5], r=0.1, alpha=3.0, q=1e-12)
    near_pole = acc.subsampled_rdp(orders=[2], r=math.nextafter(3.0, 0), alpha=3.0, q=0.005)[0]
    assert np.isfinite(big) and big > 0
    assert np.all(np.isfinite(tiny)) and np.all(tiny > 0)
    assert np.isfinite(near_pole) and near_pole > 1e20


def test_rdp_to_dp_is_canonne_kamath_steinke():
    # CKS 2020: delta = exp((lam-1)(rdp-eps)) / (lam-1) * (1 - 1/lam)^lam; invert Lemma 13
    lam, rdp = np.array([2.0, 7.0, 31.0]), np.array([0.3, 1.2, 0.05])
    eps = acc.rdp_to_dp(orders=lam, rdp=rdp, delta=DELTA)
    delta = np.exp((lam - 1) * (rdp - eps)) / (lam - 1) * (1 - 1 / lam) ** lam
    np.testing.assert_allclose(delta, DELTA, rtol=1e-12)


# --- h(r), r* and the floor ----------------------------------------------------------------

def test_h_matches_brute_force_and_reports_the_minimising_order():
    p = PRESETS["cifar10"]
    for r in (0.05, 0.235, 0.9):
        spend = acc.epsilon(r=r, alpha=3.0, q=p.q, steps=p.steps, delta=DELTA)
        assert spend.epsilon == pytest.approx(float(mp_h(r, 3.0, p.q, p.steps, DELTA)), rel=1e-11)
        assert spend.epsilon == pytest.approx(float(mp_epsilon(spend.order, r, 3.0, p.q, p.steps, DELTA)), rel=1e-11)


def test_h_is_increasing_in_r():
    p = PRESETS["mnist"]
    hs = [acc.epsilon(r=r, alpha=3.0, q=p.q, steps=p.steps, delta=DELTA).epsilon for r in np.linspace(0.01, 2.99, 300)]
    assert np.all(np.diff(hs) > 0)


def test_rstar_is_conservative_and_tight_on_the_paper_protocols():
    for p in PRESETS.values():
        for eps in (1.0, 4.0):
            r = acc.rstar(eps=eps, alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta)
            assert acc.epsilon(r=r, alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta).epsilon <= eps
            r_up = r * (1 + 1e-9)
            assert acc.epsilon(r=r_up, alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta).epsilon > eps


@settings(max_examples=60, deadline=None)
@given(
    alpha=st.floats(0.05, 20.0),
    q=st.floats(1e-5, 0.3),
    steps=st.integers(1, 50_000),
    delta=st.sampled_from([1e-3, 1e-5, 1e-8]),
    slack=st.floats(0.01, 10.0),
)
def test_rstar_never_overshoots_the_target_epsilon(alpha, q, steps, delta, slack):
    floor = acc.epsilon_floor(alpha=alpha, q=q, steps=steps, delta=delta).epsilon
    eps = floor + slack
    r = acc.rstar(eps=eps, alpha=alpha, q=q, steps=steps, delta=delta)
    assert 0 < r < alpha
    assert acc.epsilon(r=r, alpha=alpha, q=q, steps=steps, delta=delta).epsilon <= eps


def test_an_enormous_budget_returns_the_largest_r_below_alpha():
    r = acc.rstar(eps=1e300, alpha=3.0, q=0.005, steps=10, delta=DELTA)
    assert r == math.nextafter(3.0, 0.0)


def test_floor_is_the_limit_of_h_and_infeasible_eps_names_it():
    p = PRESETS["cifar10"]
    floor = acc.epsilon_floor(alpha=3.0, q=p.q, steps=p.steps, delta=DELTA)
    assert 0.5 < floor.epsilon < 1.0  # Table 7 prints no r* for CIFAR10 at eps = 0.5
    h_small = acc.epsilon(r=1e-7, alpha=3.0, q=p.q, steps=p.steps, delta=DELTA).epsilon
    assert floor.epsilon < h_small < floor.epsilon + 1e-6
    with pytest.raises(acc.InfeasibleEpsilonError, match=f"{floor.epsilon:.6f}") as err:
        acc.rstar(eps=0.5, alpha=3.0, q=p.q, steps=p.steps, delta=DELTA)
    assert err.value.floor == floor.epsilon and err.value.order == floor.order
    assert isinstance(err.value, ValueError)
    # just above the floor, r* exists and is tiny
    r = acc.rstar(eps=floor.epsilon + 1e-3, alpha=3.0, q=p.q, steps=p.steps, delta=DELTA)
    assert 0 < r < 0.05


def test_floor_falls_once_orders_reach_the_scale_of_T():
    # The factor 3 of Theorem 10 makes the floor positive for a capped order set; orders
    # lambda >> T bring it down (toward 0 as the cap grows).
    small = acc.epsilon_floor(alpha=3.0, q=0.05, steps=50, delta=DELTA, max_order=64).epsilon
    large = acc.epsilon_floor(alpha=3.0, q=0.05, steps=50, delta=DELTA, max_order=2048)
    assert large.epsilon < small and large.order > 64


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(alpha=0.0), "alpha must be"),
        (dict(alpha=-1.0), "Found alpha=-1.0"),
        (dict(q=0.0), "Found q=0.0"),
        (dict(q=1.0), "Found q=1.0"),
        (dict(delta=0.0), "Found delta=0.0"),
        (dict(delta=1.5), "Found delta=1.5"),
        (dict(steps=0), "Found steps=0"),
        (dict(steps=2.5), "Found steps=2.5"),
        (dict(eps=0.0), "Found eps=0.0"),
        (dict(eps=-2.0), "Found eps=-2.0"),
        (dict(max_order=1), "Found max_order=1"),
    ],
)
def test_bad_input_is_a_clear_value_error(kwargs, match):
    args = dict(eps=1.0, alpha=3.0, q=0.005, steps=100, delta=DELTA) | kwargs
    with pytest.raises(ValueError, match=match):
        acc.rstar(**args)


@pytest.mark.parametrize("r", [0.0, -0.1, 3.0, 4.0])
def test_r_outside_zero_alpha_is_rejected(r):
    with pytest.raises(ValueError, match=f"Found r={r}"):
        acc.epsilon(r=r, alpha=3.0, q=0.005, steps=100, delta=DELTA)


def test_epsilon_at_order_is_theorem_10_at_one_order_without_a_cap():
    p = PRESETS["cifar10"]
    kw = dict(alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta)
    spend = acc.epsilon(r=0.2349, **kw)  # h(r): the minimum over the capped orders is attained at one of them
    assert acc.epsilon_at_order(r=0.2349, order=spend.order, **kw) == pytest.approx(spend.epsilon, rel=1e-12)
    floor = acc.epsilon_floor(**kw)
    assert acc.epsilon_at_order(r=0.0, order=floor.order, **kw) == pytest.approx(floor.epsilon, rel=1e-12)
    # far beyond the cap the r -> 0 limit falls below the capped floor: the "—" cell eps = 0.5 is certifiable there
    assert acc.epsilon_at_order(r=0.0, order=60_000, **kw) < 0.5 < floor.epsilon
    assert acc.epsilon_at_order(r=3e-5, order=60_000, **kw) == pytest.approx(0.366, abs=5e-4)
    assert math.isinf(acc.epsilon_at_order(r=1e-4, order=60_000, **kw))  # lambda >= 1 + alpha / r
    for bad in (dict(order=1), dict(order=2.5), dict(order=10, r=3.0)):
        with pytest.raises(ValueError):
            acc.epsilon_at_order(**{"r": 0.1, **kw, **bad})
