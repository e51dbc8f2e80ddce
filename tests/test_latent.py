"""LATENT local-DP baseline: binary encoding, UER probabilities and their exact LDP epsilon, the
randomizer's frequencies and determinism, locality of the release, and training end to end."""

import itertools
import math

import numpy as np
import pytest
import torch

from dirdp.baselines import latent as L
from dirdp.data import Split


# ------------------------------------------------------------------------------------------ encoding

@pytest.mark.parametrize("m,n", [(2, 7), (1, 3), (3, 0), (0, 5)])
def test_encode_decode_round_trip_within_one_step(m, n):
    top = L.max_representable(int_bits=m, frac_bits=n)
    z = (torch.rand(50, 40, generator=torch.Generator().manual_seed(0)) * 2 - 1) * top
    bits = L.binary_encode(z, int_bits=m, frac_bits=n)
    assert bits.shape == (50, 40 * (1 + m + n)) and bits.dtype == torch.uint8
    assert set(bits.unique().tolist()) <= {0, 1}
    back = L.binary_decode(bits, int_bits=m, frac_bits=n)
    err = (z.double() - back).abs()
    assert err.max() < 2.0 ** -n + 1e-12
    assert (back.abs() <= z.double().abs() + 1e-12).all()  # truncation toward zero
    grid = torch.tensor([[0.0, 2.0 ** -n, -(2.0 ** -n), top, -top]])  # values on the grid come back exactly
    assert torch.equal(L.binary_decode(L.binary_encode(grid, int_bits=m, frac_bits=n), int_bits=m, frac_bits=n),
                       grid.double())


def test_sign_bit_layout_and_clipping():
    z = torch.tensor([[1.5, -1.5, 100.0, -100.0]])
    bits = L.binary_encode(z, int_bits=2, frac_bits=3).reshape(4, 6)
    # [sign | 2 whole bits | 3 fraction bits], most significant first: 1.5 = 01.100
    assert bits[0].tolist() == [0, 0, 1, 1, 0, 0]
    assert bits[1].tolist() == [1, 0, 1, 1, 0, 0]
    # clipped at the range edge 2**2 - 2**-3 = 3.875 = 11.111, sign kept
    assert bits[2].tolist() == [0, 1, 1, 1, 1, 1]
    assert bits[3].tolist() == [1, 1, 1, 1, 1, 1]
    assert L.binary_decode(bits.reshape(1, -1), int_bits=2, frac_bits=3).tolist() == [[1.5, -1.5, 3.875, -3.875]]
    with pytest.raises(ValueError, match="NaN"):
        L.binary_encode(torch.tensor([[float("nan")]]), int_bits=2, frac_bits=3)


def test_zscore_is_per_record():
    f = torch.tensor([[1.0, 2.0, 3.0, 4.0], [10.0, 10.0, 10.0, 10.0], [0.0, 0.0, 0.0, 8.0]])
    z = L.zscore(f)
    assert torch.allclose(z[0], (f[0] - 2.5) / f[0].std(correction=0))
    assert torch.equal(z[1], torch.zeros(4))  # constant record: std floored, all zeros
    assert torch.allclose(z.mean(1)[[0, 2]], torch.zeros(2), atol=1e-6)
    assert torch.allclose(z.std(1, correction=0)[[0, 2]], torch.ones(2), atol=1e-5)
    assert torch.allclose(L.zscore(f[2:] * 7 + 3), z[2:], atol=1e-5)  # needs nothing but the record


# ------------------------------------------------------------------------------- UER probabilities

def test_uer_probabilities_are_the_papers_formulas():
    eps, length, alpha = 0.5, 1000, 5.0
    pr = L.uer_probabilities(eps=eps, length=length, alpha=alpha)
    x = eps / length  # eps / (r l): the whole string is the sensitivity
    assert pr.eps_per_bit == pytest.approx(x)
    assert pr.p_a == pytest.approx(alpha / (1 + alpha))
    assert pr.p_b == pytest.approx(1 / (1 + alpha ** 3))
    assert pr.q_a == pr.q_b == pytest.approx(1 / (1 + alpha * math.exp(x)))
    assert (pr.n_a, pr.n_b) == (500, 500)
    p, q = pr.per_position()
    assert torch.equal(p[0::2], torch.full((500,), pr.p_a, dtype=torch.float64))
    assert torch.equal(p[1::2], torch.full((500,), pr.p_b, dtype=torch.float64))
    halves = L.uer_probabilities(eps=eps, length=7, alpha=alpha, split="halves")
    assert halves.group_a().tolist() == [True] * 4 + [False] * 3
    moue = L.uer_probabilities(eps=eps, length=length, alpha=alpha, mechanism="moue")
    assert moue.p_a == moue.p_b == pytest.approx(1 / (1 + alpha)) and moue.q_a == pytest.approx(pr.q_a)
    assert L.uer_probabilities(eps=eps, length=length, sensitivity=2).eps_per_bit == pytest.approx(eps / 2)
    inf = L.uer_probabilities(eps=math.inf, length=10, alpha=alpha)
    assert inf.q_a == 0.0 and inf.p_a == pytest.approx(alpha / (1 + alpha))


def test_alpha_keeps_more_zeros():
    ps = [L.uer_probabilities(eps=1.0, length=100, alpha=a) for a in (1.0, 2.0, 5.0, 7.0, 10.0)]
    keep_zero = [1 - p.q_a for p in ps]
    assert all(b > a for a, b in zip(keep_zero, keep_zero[1:]))
    assert all(b.p_a > a.p_a for a, b in zip(ps, ps[1:]))  # first group keeps more ones
    assert all(b.p_b < a.p_b for a, b in zip(ps, ps[1:]))  # the second keeps fewer
    one = ps[0]  # alpha = 1: UER is OUE
    oue = L.uer_probabilities(eps=1.0, length=100, mechanism="oue")
    assert (one.p_a, one.p_b, one.q_a) == pytest.approx((oue.p_a, oue.p_b, oue.q_a))


def _brute_force_epsilon(pr):
    """max over all input pairs and outputs of |ln Pr[y|x] / Pr[y|x']|, by enumeration."""
    p, q = (t.numpy() for t in pr.per_position())
    strings = np.array(list(itertools.product([0, 1], repeat=pr.length)))
    # log Pr[y | x] for every (x, y): [2^L, 2^L]
    p1 = np.where(strings[:, None, :] == 1, p, q)  # Pr[out=1 | x] broadcast over y
    logp = np.where(strings[None, :, :] == 1, np.log(p1), np.log1p(-p1)).sum(-1)
    return (logp[:, None, :] - logp[None, :, :]).max()


@pytest.mark.parametrize("mechanism,alpha,split", [("uer", 5.0, "parity"), ("uer", 3.0, "halves"),
                                                   ("uer", 1.0, "parity"), ("moue", 5.0, "parity"),
                                                   ("oue", 1.0, "parity"), ("rr", 1.0, "parity")])
def test_worst_case_epsilon_is_the_exact_max_likelihood_ratio(mechanism, alpha, split):
    pr = L.uer_probabilities(eps=2.0, length=5, alpha=alpha, mechanism=mechanism, split=split)
    assert pr.worst_case_epsilon() == pytest.approx(_brute_force_epsilon(pr), rel=1e-9)
    # pair_epsilon on every pair of strings agrees with the enumeration too
    strings = torch.tensor(list(itertools.product([0, 1], repeat=5)), dtype=torch.uint8)
    a = strings.repeat_interleave(len(strings), 0)
    b = strings.repeat(len(strings), 1)
    assert float(L.pair_epsilon(a, b, pr).max()) == pytest.approx(pr.worst_case_epsilon(), rel=1e-9)
    assert float(L.pair_epsilon(strings[3], strings[3], pr)) == 0.0


@pytest.mark.parametrize("eps", [0.1, 0.5, 2.0, 10.0])
@pytest.mark.parametrize("length", [10, 320, 92_160])
def test_ldp_bound_holds_for_the_sound_mechanisms(eps, length):
    # whole string, sensitivity r*l = length: max over strings of the product of per-bit ratios <= e^eps
    for mechanism, alpha in (("rr", 1.0), ("oue", 1.0), ("moue", 5.0), ("moue", 7.0), ("uer", 1.0)):
        pr = L.uer_probabilities(eps=eps, length=length, alpha=alpha, mechanism=mechanism)
        assert pr.worst_case_epsilon() <= eps * (1 + 1e-9), (mechanism, alpha)
    assert L.uer_probabilities(eps=eps, length=length, mechanism="rr").worst_case_epsilon() == pytest.approx(eps)


@pytest.mark.parametrize("alpha", [2.0, 5.0, 7.0])
def test_uer_with_alpha_above_one_breaks_the_claimed_bound(alpha):
    # the audit finding: UER's per-bit loss does not shrink with eps, so the claimed eps-LDP fails
    assert L.uer_probabilities(eps=0.5, length=10, alpha=alpha).worst_case_epsilon() > 0.5
    pr = L.uer_probabilities(eps=0.5, length=92_160, alpha=alpha)
    ea, eb = pr.bit_epsilons()
    assert ea == pytest.approx(math.log(alpha), rel=1e-3)
    assert eb == pytest.approx(math.log((1 + alpha ** 3) / (1 + alpha)), rel=1e-3)
    assert pr.worst_case_epsilon() > 1e4 * pr.eps
    tiny = L.uer_probabilities(eps=1e-6, length=92_160, alpha=alpha)
    huge = L.uer_probabilities(eps=1e3, length=92_160, alpha=alpha)
    assert tiny.worst_case_epsilon() > 1e4 and huge.worst_case_epsilon() == pytest.approx(
        tiny.worst_case_epsilon(), rel=0.01)


# ------------------------------------------------------------------------------------- randomizer

def test_uer_frequencies_match_probabilities_and_generator_fixes_output():
    n, length = 4000, 40
    g = torch.Generator().manual_seed(0)
    pr = L.uer_probabilities(eps=20.0, length=length, alpha=3.0)
    for value in (0, 1):
        bits = torch.full((n, length), value, dtype=torch.uint8)
        out = L.uer(bits, eps=20.0, alpha=3.0, generator=g)
        assert out.dtype == torch.uint8 and out.shape == bits.shape
        freq = out.double().mean(0)
        p, q = pr.per_position()
        expect = p if value else q
        se = torch.sqrt(expect * (1 - expect) / n).clamp(min=1e-3)
        assert ((freq - expect).abs() / se).max() < 5.0
    bits = (torch.rand(30, length, generator=torch.Generator().manual_seed(1)) < 0.5).to(torch.uint8)
    a = L.uer(bits, eps=1.0, alpha=5.0, generator=torch.Generator().manual_seed(7))
    b = L.uer(bits, eps=1.0, alpha=5.0, generator=torch.Generator().manual_seed(7))
    c = L.uer(bits, eps=1.0, alpha=5.0, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)


def _images(n, *, seed, size=8):
    """Two classes of 1 x 8 x 8 images: bright left half or bright right half, plus noise."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    x = torch.randn(n, 1, size, size, generator=g) * 0.5
    half = size // 2
    x[y == 0, :, :, :half] += 1.5
    x[y == 1, :, :, half:] += 1.5
    return Split(x, y.to(torch.int64))


def _conv():
    return L.conv_module(1, channels=(4, 8), kernel=3, pool=2, seed=0)  # 8x8 -> 2x2x8 = 32 features


def test_encode_dataset_is_local_and_reproducible():
    data = _images(50, seed=0)
    cfg = L.LatentConfig(eps=1.0, alpha=5.0, int_bits=2, frac_bits=4)
    conv = _conv()
    clean = L.encode_dataset(conv, data, cfg, generator=torch.Generator(), randomize_bits=False, batch=7)
    assert clean.shape == (50, 32 * 7) and clean.dtype == torch.uint8
    alone = L.encode_dataset(conv, Split(data.x[10:11], data.y[10:11]), cfg, generator=torch.Generator(),
                             randomize_bits=False)
    assert torch.equal(alone[0], clean[10])  # a record's string depends on that record only
    r1 = L.encode_dataset(conv, data, cfg, generator=torch.Generator().manual_seed(3), batch=7)
    r2 = L.encode_dataset(conv, data, cfg, generator=torch.Generator().manual_seed(3), batch=50)
    assert torch.equal(r1, r2)  # batching does not change the release
    assert not torch.equal(r1, clean)
    assert all(not p.requires_grad for p in conv.parameters())


def test_default_conv_module_size_and_paper_layout():
    x = torch.zeros(2, 1, 28, 28)
    assert L.conv_module(1)(x).shape == (2, 1152)
    assert L.conv_module(1, **L.PAPER_MNIST_CONV)(x).shape == (2, 9216)  # the paper's MNIST flatten layer
    a, b = L.conv_module(1, seed=4), L.conv_module(1, seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


# ---------------------------------------------------------------------------------------- training

_TRAIN_KW = dict(num_classes=2, steps=60, batch_size=64, lr=3e-3, hidden=32, dropout=0.0, eval_every=30,
                 log_every=10, seed=0)


@pytest.fixture(scope="module")
def tiny_data():
    return _images(400, seed=1), _images(200, seed=2)


def _run(data, **cfg):
    train, test = data
    return L.train_latent(train=train, test=test, cfg=L.LatentConfig(int_bits=2, frac_bits=4, **cfg),
                          conv_module=_conv(), **_TRAIN_KW)


def test_train_latent_learns_at_large_eps_and_not_at_tiny_eps(tiny_data):
    big = _run(tiny_data, eps=1e4, mechanism="rr")  # 1e4 / 224 bits: flips with probability ~e^-45
    assert big["test_accuracy"] >= 95.0
    assert big["string_length"] == 32 * 7 and big["n_features"] == 32
    assert big["eps_ldp_worst_case"] == pytest.approx(1e4)
    assert [s for s, _ in big["accuracy_curve"]] == [30, 60]
    assert [s for s, _ in big["loss_curve"]] == [10, 20, 30, 40, 50, 60]
    assert big["loss_curve"][-1][1] < big["loss_curve"][0][1]
    tiny = _run(tiny_data, eps=1e-3, mechanism="rr")  # a sound eps-LDP release at tiny eps: chance
    assert 35.0 <= tiny["test_accuracy"] <= 65.0
    again = _run(tiny_data, eps=1e4, mechanism="rr")
    assert again["accuracy_curve"] == big["accuracy_curve"] and again["loss_curve"] == big["loss_curve"]


def test_train_latent_uer_accuracy_does_not_depend_on_the_claimed_eps(tiny_data):
    # the paper's UER at alpha = 7: high accuracy at a claimed eps of 1e-3, because the actual LDP
    # epsilon of each released string is ~1.5 L ln(alpha), whatever eps says
    res = _run(tiny_data, eps=1e-3, alpha=7.0)
    assert res["test_accuracy"] >= 85.0
    assert res["eps_claimed"] == 1e-3
    assert res["eps_ldp_worst_case"] > 500
    assert res["eps_pair_median"] > 50  # exact loss between two actual training records' strings
    assert res["probabilities"]["flip_one_b"] == pytest.approx(1 - 1 / (1 + 7.0 ** 3))
    assert res["guarantee"].startswith("local DP per record")
