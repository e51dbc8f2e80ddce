"""Baselines run here: DP-SGD with Opacus, the tempered-sigmoid CNN, and LATENT through the run pipeline."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dirdp import models
from dirdp.baselines import dpsgd
from dirdp.data import load
from dirdp.training import make_config, train


def test_tempered_sigmoid_is_tanh_at_2_2_1_and_bounded():
    x = torch.linspace(-30, 30, 1001)
    assert torch.allclose(models.TemperedSigmoid(2, 2, 1)(x), torch.tanh(x), atol=1e-6)
    y = models.TemperedSigmoid(1.58, 3.0, 0.71)(x)  # Papernot et al.'s CIFAR10 triplet
    assert y.min() >= -0.71 - 1e-6 and y.max() <= 1.58 - 0.71 + 1e-6


@pytest.mark.parametrize("eps,q,steps", [(1.0, 250 / 60000, 9600), (2.0, 250 / 60000, 9600), (2.0, 0.01, 500),
                                         (8.0, 250 / 73257, 11722)])
@pytest.mark.slow
def test_noise_multiplier_meets_the_target_epsilon_not_above(eps, q, steps):
    from opacus.accountants import RDPAccountant

    cal = dpsgd.calibrate(eps=eps, delta=1e-5, q=q, steps=steps)
    acc = RDPAccountant()
    acc.history = [(cal.noise_multiplier, q, steps)]
    independent = acc.get_epsilon(delta=1e-5, alphas=dpsgd.rdp_orders())
    assert acc.get_epsilon(delta=1e-5) >= independent  # Opacus' default orders only loosen the bound
    assert independent == pytest.approx(cal.epsilon_rdp)
    assert eps - 0.02 <= cal.epsilon_rdp <= eps  # Opacus' binary search stops within 0.01 below the target
    assert 0 < cal.epsilon_prv <= cal.epsilon_rdp + 1e-9  # PRV is the tighter accountant here


def test_calibration_warns_only_when_the_answers_best_order_is_the_largest():
    """At (q, T) = (0.005, 2000) Opacus' search probes small sigmas whose best order is 256 and warns;
    the answer's best order is 14, so calibrate() says nothing."""
    import warnings

    from opacus.accountants.analysis.rdp import compute_rdp, get_privacy_spent

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cal = dpsgd.calibrate(eps=1.0, delta=1e-5, q=0.005, steps=2000)
    assert not [w for w in caught if "largest alpha" in str(w.message)]
    orders = dpsgd.rdp_orders()
    rdp = compute_rdp(q=0.005, noise_multiplier=cal.noise_multiplier, steps=2000, orders=orders)
    assert get_privacy_spent(orders=orders, rdp=rdp, delta=1e-5)[1] < max(orders)


@pytest.mark.slow
def test_noise_multiplier_falls_as_the_budget_grows():
    sig = [dpsgd.calibrate(eps=e, delta=1e-5, q=250 / 60000, steps=9600).noise_multiplier for e in (0.5, 1, 2, 4)]
    assert sig == sorted(sig, reverse=True)


def test_make_compatible_swaps_batchnorm_for_groupnorm():
    net = dpsgd.make_compatible(models.build_model("inception", num_classes=10, in_channels=1, width=0.25))
    kinds = {type(m) for m in net.modules()}
    assert nn.GroupNorm in kinds and not any(issubclass(k, nn.modules.batchnorm._BatchNorm) for k in kinds)
    cnn = models.build_model("papernot_cnn", num_classes=10, in_channels=1)
    assert dpsgd.make_compatible(cnn) is not None  # no normalisation: nothing to change


def test_dp_sgd_step_is_the_mean_of_clipped_per_example_gradients():
    """With sigma = 0 the DPOptimizer's gradient must equal sum_i clip_C(g_i) / (q n), g_i computed
    one example at a time by hand."""
    torch.manual_seed(0)
    net = models.build_model("papernot_cnn", num_classes=10, in_channels=1, width=0.5)
    ref = [p.detach().clone() for p in net.parameters()]
    x, y = torch.randn(6, 1, 28, 28) * 3, torch.arange(6)
    C, n, q = 0.05, 60, 0.1  # a small C so that every example is clipped
    per_example = []
    for i in range(len(y)):
        net.zero_grad()
        F.cross_entropy(net(x[i:i + 1]), y[i:i + 1]).backward()
        g = [p.grad.detach().clone() for p in net.parameters()]
        norm = torch.sqrt(sum((t ** 2).sum() for t in g))
        per_example.append([t * min(1.0, C / (float(norm) + 1e-6)) for t in g])
    expected = [sum(gs) / (q * n) for gs in zip(*per_example)]
    module, opt = dpsgd.make_private(net, torch.optim.SGD(net.parameters(), lr=1.0), n=n, q=q, noise_multiplier=0.0,
                                     max_grad_norm=C)
    F.cross_entropy(module(x), y).backward()
    opt.step()
    for p0, p, e in zip(ref, net.parameters(), expected):
        assert torch.allclose(p0 - p.detach(), e, atol=1e-6)


def test_empty_batch_makes_a_noise_only_update():
    torch.manual_seed(0)
    net = models.build_model("papernot_cnn", num_classes=10, in_channels=1)
    before = [p.detach().clone() for p in net.parameters()]
    module, opt = dpsgd.make_private(net, torch.optim.SGD(net.parameters(), lr=1.0), n=100, q=0.01,
                                     noise_multiplier=1.0, generator=torch.Generator().manual_seed(0))
    dpsgd.noise_only_step(module, opt)
    # every coordinate of every parameter moves by N(0, (sigma C / (q n))^2) = N(0, 1) here (lr 1): a no-op fails
    diffs = torch.cat([(p.detach() - b).flatten() for p, b in zip(net.parameters(), before)])
    assert diffs.numel() > 20_000 and (diffs != 0).all()
    assert float(diffs.std()) == pytest.approx(1.0 * 1.0 / (0.01 * 100), rel=0.05)  # sigma C / (q n)
    assert abs(float(diffs.mean())) < 0.05


def test_empty_batches_after_a_step_each_make_a_noise_only_update():
    # a real step, then two empty batches in a row: each is its own noise-only update (Opacus refuses a step on a
    # sum it has noised already, so a step that did not clear the last one's gradients failed here)
    torch.manual_seed(0)
    net = models.build_model("papernot_cnn", num_classes=10, in_channels=1)
    module, opt = dpsgd.make_private(net, torch.optim.SGD(net.parameters(), lr=1.0), n=100, q=0.01,
                                     noise_multiplier=1.0, generator=torch.Generator().manual_seed(0))
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(module(torch.randn(2, 1, 28, 28)), torch.tensor([0, 1])).backward()
    opt.step()
    moves = []
    for _ in range(2):
        before = torch.cat([p.detach().flatten().clone() for p in net.parameters()])
        dpsgd.noise_only_step(module, opt)
        moves.append(torch.cat([p.detach().flatten() for p in net.parameters()]) - before)
    for d in moves:  # N(0, (sigma C / (q n))^2) = N(0, 1) per coordinate: nothing of the real step's gradient left
        assert float(d.std()) == pytest.approx(1.0, rel=0.05) and abs(float(d.mean())) < 0.05
    assert not torch.equal(moves[0], moves[1])


@pytest.fixture(scope="module")
def tiny_mnist(tiny_root):
    return {s: load("mnist", s, root=tiny_root, download=False) for s in ("train", "test")}


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dpsgd", "tempered", "latent"])
def test_each_baseline_trains_through_the_run_pipeline(method, tiny_mnist, tmp_path):
    cfg = make_config("mnist", 2.0, 0, method=method, steps=6, q=0.25, width=0.0625, eval_every=3, log_every=2)
    res = train(cfg, tmp_path / f"{method}.json", data=tiny_mnist, progress=False)
    saved = json.loads((tmp_path / f"{method}.json").read_text())
    assert saved["method"] == method and saved["provenance"]["config"]["method"] == method
    assert 0 <= res["test_accuracy"] <= 100 and len(res["accuracy_curve"]) == 2
    if method == "latent":
        assert res["epsilon"] == 2.0 and res["eps_ldp_worst_case"] > 100 * res["epsilon"]  # the claim does not hold
    else:
        assert res["noise_multiplier"] > 0 and res["epsilon"] <= 2.0 and res["epsilon_prv"] <= res["epsilon"]
        assert res["model"] == ("papernot_cnn" if method == "tempered" else "inception")
        again = train(cfg, tmp_path / f"{method}_again.json", data=tiny_mnist, progress=False)
        assert again["params_sha256"] == res["params_sha256"]  # noise and sampling come from the run's seed


def test_latent_refuses_eps_inf():
    with pytest.raises(ValueError, match="finite eps"):
        make_config("mnist", math.inf, 0, method="latent")
