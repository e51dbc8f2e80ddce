"""The BatchNorm channel (dirdp.audit.batchnorm): the Dirichlet Renyi divergence against quadrature and Lemma 9, one
record moving the other records' releases through BatchNorm (and not through GroupNorm), and the running statistics
as a noise-free channel."""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from dirdp import accountant
from dirdp.audit import batchnorm
from dirdp.models import build_model

from conftest import pinned_torch_threads


one_thread = pinned_torch_threads(1, "module")  # tiny tensors: threads only add overhead


@pytest.mark.parametrize("order", [2.0, 3.5, 8.0])
def test_dirichlet_renyi_is_the_beta_divergence_by_quadrature(order):
    a, b = torch.tensor([[3.2, 3.05]]), torch.tensor([[3.0, 3.25]])
    pa, pb = stats.beta(*a[0].tolist()), stats.beta(*b[0].tolist())
    integral = integrate.quad(lambda x: pa.pdf(x) ** order * pb.pdf(x) ** (1 - order), 0, 1, epsabs=1e-13)[0]
    want = math.log(integral) / (order - 1)
    assert float(batchnorm.dirichlet_renyi(a, b, order)[0]) == pytest.approx(want, rel=1e-7)
    assert float(batchnorm.dirichlet_renyi(a, a, order)[0]) == pytest.approx(0.0, abs=1e-12)


def test_lemma9_bounds_the_exact_divergence_of_any_pair_of_simplex_inputs_and_inf_beyond_its_orders():
    r, alpha, d = 0.2771, 3.0, 10
    torch.manual_seed(0)
    s = torch.distributions.Dirichlet(torch.full((d,), 0.3, dtype=torch.float64)).sample((500,))
    s2 = torch.distributions.Dirichlet(torch.full((d,), 0.3, dtype=torch.float64)).sample((500,))
    vertices = torch.eye(d, dtype=torch.float64)
    for order in (2, 5, 10):
        bound = float(accountant.dirichlet_rdp(orders=np.array([order]), r=r, alpha=alpha)[0])
        exact = batchnorm.release_divergence(s, s2, r=r, alpha=alpha, order=order)
        worst = batchnorm.release_divergence(vertices[:1], vertices[1:2], r=r, alpha=alpha, order=order)
        assert float(exact.max()) <= float(worst[0]) <= bound
        assert float(worst[0]) > 0.05 * bound  # the bound is not vacuous at the vertices
    too_far = math.ceil(1 + alpha / r) + 1
    assert math.isinf(float(batchnorm.release_divergence(vertices[:1], vertices[1:2], r=r, alpha=alpha,
                                                         order=too_far)[0]))


def _net(norm, seed=0):
    torch.manual_seed(seed)
    return build_model("inception", num_classes=10, in_channels=1, width=0.0625, norm=norm)


def test_one_record_moves_the_others_releases_through_batchnorm_and_not_through_groupnorm():
    x = torch.rand(200, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    kw = dict(candidates=x[:20] * 0.5 + 0.5, q=0.05, trials=6, r=0.2771, alpha=3.0, order=10)
    bn = batchnorm.batch_influence(_net("batch"), x, **kw)
    gn = batchnorm.batch_influence(_net("group"), x, **kw)
    assert all(row["max_logit_change"] > 1e-3 and row["others_rdp"] > 0 for row in bn)
    assert all(row["max_logit_change"] < 1e-5 and row["others_rdp"] < 1e-9 for row in gn)
    assert all(row["own_rdp"] <= row["lemma9_rdp"] for row in bn + gn)
    assert [row["batch_size"] for row in bn] == [row["batch_size"] for row in gn]  # same batches: same seed


@pytest.mark.slow
def test_the_running_statistics_tell_the_two_worlds_apart_at_every_trial():
    x = torch.rand(12, 1, 28, 28, generator=torch.Generator().manual_seed(2))
    canary = torch.ones(1, 28, 28)
    for adjacency in ("add", "replace"):
        res = batchnorm.running_stats_audit(lambda seed: _net("batch", seed), x, canary, trials=40,
                                            adjacency=adjacency)
        assert res["stat0_max"] == 0.0 and res["stat1_min"] > 1e-4  # world 0 is known exactly: no noise
        assert res["fpr"] == 0 and res["fnr"] == 0 and res["eps_lower_bound"] == pytest.approx(res["ceiling"])
        assert res["held_out_per_world"] == 20
    with pytest.raises(ValueError, match="no BatchNorm"):
        batchnorm.running_stats_audit(lambda seed: _net("group", seed), x, canary, trials=2)


@pytest.mark.slow
def test_the_membership_score_finds_the_last_batch_when_it_makes_the_running_mean():
    """With the first BatchNorm's momentum set to 1 the running mean IS the last batch's (~4 records) mean: its
    records must score above test records (which differ in brightness, so their channel means differ). At the
    models' momentum 0.1 the last batch holds 10% of it, spread over ~250 records (the notebook measures that)."""
    from dirdp.data import Split

    g = torch.Generator().manual_seed(3)

    def images(n):
        return (torch.rand(n, 1, 1, 1, generator=g) * torch.rand(n, 1, 28, 28, generator=g),
                torch.randint(10, (n,), generator=g))

    train, test = Split(*images(400)), Split(*images(300))
    net = _net("batch")
    batchnorm.first_batchnorm(net)[1].momentum = 1.0
    res = batchnorm.running_mean_membership(net, train, test, r=0.2771, alpha=3.0, q=0.01, lr=0.1, steps=3, trials=60)
    assert res["members"] == res["non_members"] > 150 and 2 < res["mean_batch"] < 7
    assert res["auc"] > 0.58  # ~0.63 expected: a channel mean of the first conv is ~ its weight sum x brightness


def test_the_first_channel_means_of_images_with_a_common_border_differ_by_brightness_times_the_kernel_sums():
    """Why the first running mean says little: at stride 1 every interior pixel enters every shifted window, so when
    images share their border (MNIST: background, -0.42 after normalisation), channel c's spatial mean is
    (sum of kernel c) x the image's mean plus a constant of the channel: one number per image."""
    net = _net("batch")
    conv, _ = batchnorm.first_batchnorm(net)
    x = torch.full((5, 1, 28, 28), -0.4242)
    x[:, :, 2:-2, 2:-2] = torch.rand(5, 1, 24, 24, generator=torch.Generator().manual_seed(4)) * 3 - 0.4242
    phi = batchnorm.channel_means(conv, x)
    brightness = x.double().mean((1, 2, 3))
    want = (brightness - brightness[0])[:, None] * conv.weight.double().sum((1, 2, 3))[None, :]
    assert torch.allclose(phi - phi[0], want, rtol=1e-5, atol=1e-7)
    assert float((phi - phi[0]).abs().max()) > 1e-2  # the images do differ
