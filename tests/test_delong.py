"""DeLong's interval for AUC(trained) - AUC(null) on the same records (dirdp.audit.stats.paired_auc_difference), the
interval of the membership table's AUC - null column: its components against their definition, its variance against
the brute-force U-statistic covariance, and its coverage where the true difference is known."""

from __future__ import annotations

import math

import pytest
import torch

from dirdp.audit import stats


def _psi(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """psi(x_i, y_j) for every pair: 1 if x > y, 1/2 if equal, 0 if less (m x n)."""
    x, y = x.double()[:, None], y.double()[None, :]
    return (x > y).double() + 0.5 * (x == y).double()


def test_the_components_are_the_row_and_column_means_of_psi_ties_included():
    gen = torch.Generator().manual_seed(0)
    x = torch.randint(0, 6, (37,), generator=gen).double()  # few distinct values: many ties, within and across
    y = torch.randint(0, 5, (23,), generator=gen).double()
    v10, v01 = stats.delong_components(x, y)
    psi = _psi(x, y)
    assert torch.allclose(v10, psi.mean(1)) and torch.allclose(v01, psi.mean(0))
    assert float(v10.mean()) == pytest.approx(stats.roc_at(x, y)["auc"]) == pytest.approx(float(v01.mean()))


def test_the_paired_variance_is_delongs_covariance_of_the_two_u_statistics():
    """Var(A - B) = (S10_aa + S10_bb - 2 S10_ab)/m + (S01_aa + S01_bb - 2 S01_ab)/n, each S from psi directly."""
    gen = torch.Generator().manual_seed(1)
    m, n = 40, 30
    a_in, a_out = torch.randn(m, generator=gen) + 0.7, torch.randn(n, generator=gen)
    b_in = 0.6 * a_in + torch.randn(m, generator=gen)  # correlated with a on the same records
    b_out = 0.6 * a_out + torch.randn(n, generator=gen)
    got = stats.paired_auc_difference(a_in, a_out, b_in, b_out)
    pa, pb = _psi(a_in, a_out), _psi(b_in, b_out)
    s10 = torch.cov(torch.stack([pa.mean(1), pb.mean(1)]))
    s01 = torch.cov(torch.stack([pa.mean(0), pb.mean(0)]))
    var = (s10[0, 0] + s10[1, 1] - 2 * s10[0, 1]) / m + (s01[0, 0] + s01[1, 1] - 2 * s01[0, 1]) / n
    assert got["diff"] == pytest.approx(float(pa.mean() - pb.mean()))
    assert got["se"] == pytest.approx(math.sqrt(float(var)))
    assert got["ci_low"] == pytest.approx(got["diff"] - 1.959964 * got["se"], abs=1e-6)
    assert got["ci_high"] == pytest.approx(got["diff"] + 1.959964 * got["se"], abs=1e-6)
    # pairing matters: a positive correlation between the two scores narrows the interval of their difference
    alone = [stats.delong_components(a_in, a_out), stats.delong_components(b_in, b_out)]
    unpaired = math.sqrt(sum(float(v10.var()) / m + float(v01.var()) / n for v10, v01 in alone))
    assert got["se"] < unpaired


def test_the_interval_covers_a_known_difference_about_95_times_in_100():
    """Members N(mu, 1), non-members N(0, 1): AUC = Phi(mu / sqrt 2). Score a sees mu = 0.4, score b (correlated
    with a on each record) mu = 0.4 * rho: over 400 draws of 300 + 300 records the 95% interval of a - b covers the
    true difference in 0.93-0.97 of them (binomial sd of the rate at 0.95: 0.011)."""
    gen = torch.Generator().manual_seed(2)
    rho, mu, m = 0.5, 0.4, 300
    phi = torch.distributions.Normal(0.0, 1.0).cdf
    truth = float(phi(torch.tensor(mu / math.sqrt(2))) - phi(torch.tensor(rho * mu / math.sqrt(2))))
    covered = 0
    noise = math.sqrt(1 - rho ** 2)

    def draw():
        return torch.randn(m, generator=gen, dtype=torch.float64)

    for _ in range(400):
        a_in, a_out = draw() + mu, draw()
        b_in, b_out = rho * a_in + noise * draw(), rho * a_out + noise * draw()  # b: mean rho * mu, variance 1
        got = stats.paired_auc_difference(a_in, a_out, b_in, b_out)
        covered += got["ci_low"] <= truth <= got["ci_high"]
    assert 0.93 <= covered / 400 <= 0.97, covered


def test_the_random_tie_ranks_give_roc_random_ties_its_auc():
    gen = torch.Generator().manual_seed(3)
    s_in = torch.cat([torch.zeros(50), torch.rand(50, generator=gen)])
    s_out = torch.cat([torch.zeros(50), -torch.rand(50, generator=gen)])
    r_in, r_out = stats.random_tie_ranks(s_in, s_out, generator=torch.Generator().manual_seed(4))
    assert sorted(torch.cat([r_in, r_out]).tolist()) == list(range(200))  # a ranking: no two records share a rank
    assert (r_in[50:] > r_out[50:].max()).all()  # the untied members rank above the untied non-members
    auc = stats.roc_random_ties(s_in, s_out, generator=torch.Generator().manual_seed(4))["auc"]
    assert auc == pytest.approx(stats.roc_at(r_in, r_out)["auc"])


def test_unpaired_or_too_few_records_is_an_error_that_says_what_it_found():
    x = torch.randn(5)
    with pytest.raises(ValueError, match="Found 5 and 4 members"):
        stats.paired_auc_difference(x, x, x[:4], x)
    with pytest.raises(ValueError, match="at least 2"):
        stats.paired_auc_difference(x[:1], x, x[:1], x)
