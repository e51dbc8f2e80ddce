"""Mechanism 8 and the loss of Algorithm 1 (lines 4-7)."""

import numpy as np
import pytest
import torch
from scipy import stats

from dirdp import accountant
from dirdp.mechanism import dirichlet_nll, log_dirichlet_rsample
from dirdp.presets import PRESETS


def rstar_mnist_eps1(alpha):
    p = PRESETS["mnist"]
    return accountant.rstar(eps=1.0, alpha=alpha, q=p.q, steps=p.steps, delta=p.delta)


@pytest.mark.parametrize("alpha", [0.1, 1.0])
def test_samples_follow_the_dirichlet_marginals(alpha):
    # p~_k ~ Beta(eta_k, tau - eta_k) for p~ ~ Dir(eta): KS tests of the sampler's p~_k and of
    # the loss -log p~_y itself, P(loss <= l) = P(1 - p~_y <= 1 - e^-l) with 1 - p~_y ~ Beta(tau - eta_y, eta_y)
    r = 3.0 * alpha
    s = torch.tensor([0.05, 0.25, 0.7])
    eta = (r * s + alpha).double().numpy()
    tau = eta.sum()
    g = torch.Generator().manual_seed(1)
    p = log_dirichlet_rsample(torch.from_numpy(eta).float().repeat(40_000, 1), g).exp().double().numpy()
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-5)
    logits = s.log().repeat(40_000, 1)
    for k in range(3):
        assert stats.kstest(p[:, k], stats.beta(eta[k], tau - eta[k]).cdf).pvalue > 1e-3
        y = torch.full((40_000,), k)
        loss = dirichlet_nll(logits, y, r=r, alpha=alpha, generator=g, reduction="none").double().numpy()
        marginal, complement = stats.beta(eta[k], tau - eta[k]), stats.beta(tau - eta[k], eta[k])

        def cdf(l):  # each branch where its floating-point argument keeps full precision
            return np.where(l < 1, complement.cdf(-np.expm1(-l)), marginal.sf(np.exp(-l)))

        assert stats.kstest(loss, cdf).pvalue > 1e-3


def test_same_generator_seed_same_loss_and_gradient():
    logits = torch.randn(250, 10, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 10, (250,), generator=torch.Generator().manual_seed(0))
    out = []
    for seed in (7, 7, 8):
        z = logits.clone().requires_grad_(True)
        loss = dirichlet_nll(z, y, r=0.277, alpha=3.0, generator=torch.Generator().manual_seed(seed))
        loss.backward()
        out.append((loss.detach(), z.grad))
    assert torch.equal(out[0][0], out[1][0]) and torch.equal(out[0][1], out[1][1])
    assert not torch.equal(out[0][0], out[2][0])


def test_reductions_and_shapes():
    z = torch.randn(5, 7)
    y = torch.arange(5)
    g = torch.Generator()
    none = dirichlet_nll(z, y, r=0.1, alpha=3.0, reduction="none", generator=g.manual_seed(0))
    assert none.shape == (5,) and (none > 0).all()
    assert dirichlet_nll(z, y, r=0.1, alpha=3.0, reduction="mean", generator=g.manual_seed(0)) == pytest.approx(none.mean().item())
    assert dirichlet_nll(z, y, r=0.1, alpha=3.0, reduction="sum", generator=g.manual_seed(0)) == pytest.approx(none.sum().item())
    with pytest.raises(ValueError, match="reduction"):
        dirichlet_nll(z, y, r=0.1, alpha=3.0, reduction="max")
    with pytest.raises(ValueError, match="Found r=0"):
        dirichlet_nll(z, y, r=0, alpha=3.0)


def test_a_million_draws_at_alpha_0_1_are_finite_in_float32():
    alpha = 0.1
    r = rstar_mnist_eps1(alpha)
    g = torch.Generator().manual_seed(0)
    # confident, wrong and uniform logits, 1e6 draws in all
    logits = torch.cat([torch.randn(400_000, 10, generator=g) * 10, torch.zeros(200_000, 10),
                        torch.randn(400_000, 10, generator=g)]).requires_grad_(True)
    y = torch.randint(0, 10, (1_000_000,), generator=g)
    loss = dirichlet_nll(logits, y, r=r, alpha=alpha, generator=g, reduction="none")
    loss.sum().backward()
    assert loss.dtype == torch.float32
    assert torch.isfinite(loss).all() and torch.isfinite(logits.grad).all()


@pytest.mark.parametrize("alpha", [0.1, 0.3, 1.0, 3.0, 10.0])
def test_finite_over_the_alpha_range_of_figure_2(alpha):
    r = rstar_mnist_eps1(alpha)
    g = torch.Generator().manual_seed(3)
    logits = (torch.randn(50_000, 10, generator=g) * 20).requires_grad_(True)
    y = torch.randint(0, 10, (50_000,), generator=g)
    loss = dirichlet_nll(logits, y, r=r, alpha=alpha, generator=g)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logits.grad).all()


def test_bf16_autocast_gives_finite_float32_loss_and_gradients():
    g = torch.Generator().manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    x = torch.randn(250, 20, generator=g)
    y = torch.randint(0, 10, (250,), generator=g)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(x)
        assert logits.dtype == torch.bfloat16
        loss = dirichlet_nll(logits, y, r=rstar_mnist_eps1(0.1), alpha=0.1, generator=g)
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.parametrize("d,alpha,s_y", [(10, 0.1, 0.9), (7, 3.0, 0.2), (10, 3.0, 0.9)])
def test_under_bf16_autocast_the_mechanism_still_follows_theorem_11(d, alpha, s_y):
    # bf16 logits, the mechanism called inside a bf16 autocast region, its bf16 gradient: the loss's mean and variance
    # (Eqs. 4-5) and the expected logit gradient (Theorem 11) by the same z-score rule as the fp32 check
    from dirdp import theory

    g = torch.Generator().manual_seed(11)
    rows = theory.monte_carlo_check(s_y=s_y, r=0.08 * alpha, alpha=alpha, d=d, draws=100_000, generator=g, bf16=True)
    z = np.array([row["z"] for row in rows])
    assert len(rows) == 2 + d and np.all(np.abs(z) < 4.5), rows  # Bonferroni over the statistics of the whole test


def test_under_bf16_autocast_logits_of_magnitude_1e3_at_rstar_give_finite_loss_and_gradients():
    g = torch.Generator().manual_seed(0)
    r = rstar_mnist_eps1(3.0)
    logits = (1e3 * torch.randn(250, 10, generator=g)).to(torch.bfloat16).requires_grad_(True)
    y = torch.randint(0, 10, (250,), generator=g)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = dirichlet_nll(logits, y, r=r, alpha=3.0, generator=g)
    loss.backward()
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    assert logits.grad.dtype == torch.bfloat16 and torch.isfinite(logits.grad).all()
    assert logits.grad.abs().sum() > 0  # the gradient is not flushed away either


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_runs_on_cuda_with_a_cuda_generator():
    g = torch.Generator(device="cuda").manual_seed(0)
    logits = torch.randn(250, 10, device="cuda", requires_grad=True)
    y = torch.randint(0, 10, (250,), device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = dirichlet_nll(logits, y, r=0.277, alpha=3.0, generator=g)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logits.grad).all()
