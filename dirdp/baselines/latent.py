"""LATENT (Chamikara et al., "Local Differential Privacy for Deep Learning", arXiv:1908.02997, IEEE
IoT-J 2019): a local-DP baseline, run here, with an exact audit of the guarantee it claims.

Pipeline (Algorithm 1 of the paper)::

    image --conv module (data owner, untrained, frozen)--> k features
          --LATENT layer (data owner)-->  z-score -> binary encoding -> merge -> randomize (UER)
          --> one randomized bit string of length L = k * (1 + m + n) per record   (the LDP release)
          --> fully connected module trained by the untrusted service on the strings.

The guarantee LATENT claims is *local* DP per record: the bit string released for one record is
said to be eps-LDP (any two inputs are neighbours). That is a different promise from the central
(eps, delta)-DP of the rest of this package, which bounds what a trained model reveals about one
training example. No accounting is needed for the FC module: it is post-processing of the release.

Binary encoding (Sec. III-A of the paper): each value gets 1 sign bit (1 = negative), ``m`` bits for
the whole part and ``n`` bits for the fraction. Here value v is clipped to the representable range
|v| <= 2**m - 2**-n and its magnitude truncated to the grid 2**-n (the fraction digits of |v|), so

    code = floor(min(|v|, 2**m - 2**-n) * 2**n),   bits = [v < 0] ++ binary(code, m + n bits, MSB first).

The bit strings of a record's k values are concatenated in feature order (value-major).

Randomization. With L the string length, eps' = eps / S the budget per bit, S the sensitivity
(the paper: S = r * l, the whole merged string, "eps divided by the sensitivity for each bit",
following RAPPOR), and alpha the privacy-budget coefficient, each bit is kept or flipped
independently with

  ========  ==============================  ===============================
  name      Pr[out = 1 | in = 1]            Pr[out = 1 | in = 0]
  ========  ==============================  ===============================
  ``rr``    e^eps' / (1 + e^eps')           1 / (1 + e^eps')     (Warner's randomized response)
  ``oue``   1/2                             1 / (1 + e^eps')     (OUE, Wang et al. 2017)
  ``moue``  1 / (1 + alpha)                 1 / (1 + alpha e^eps')   (MOUE)
  ``uer``   group A: alpha / (1 + alpha)    1 / (1 + alpha e^eps')   (UER, the paper's choice)
            group B: 1 / (1 + alpha**3)     1 / (1 + alpha e^eps')
  ========  ==============================  ===============================

For UER, group A is the positions i in 2N and group B the positions i in 2N + 1 (``split="parity"``,
0-based; the default), or the first and second half of the string (``split="halves"``).

Sources and what is ours
------------------------
* The paper's text was not retrievable through this project's search tool. The MOUE/UER
  probabilities above are those of two independent public implementations which agree with each
  other: a LATENT reproduction (``LATENTModel.py`` of a repository whose README says it reproduces
  "Local Differential Privacy for Deep Learning (IOTJ 2019)") and a file from an LDP energy-data
  project whose ``randomize`` is marked as code from the authors' follow-up LDPFL paper; both use
  alternating (even/odd) positions and eps / S per bit with S = the string length. The seed summary
  (``shared/seeds/004_*``) says "two randomization models across different halves"; we read the
  paper's "i in 2n / i in 2n + 1" as parity and offer ``split="halves"`` for the other reading.
* Sensitivity: S = L = r * l (summary, Appendix E: "sensitivity r x l, eps divided by the
  sensitivity for each bit"). ``sensitivity=`` overrides it.
* z-score (paper: "z-score normalization of the flattened 1-D inputs", statistics not specified):
  per record, over that record's own k features (population std, floor ``std_floor``), so that a
  data owner needs no statistic of anybody else's data (otherwise the release is not local).
* Bit widths (paper's MNIST setup: 10 bits per value, split not stated in the summary): defaults
  ``int_bits=2, frac_bits=7`` -> 10 bits, range |z| < 4 and step 2**-7.
* alpha (paper: MNIST headline at eps = 0.5 with alpha > 5; its eps sweep uses alpha = 7): 7.
* Conv module: the data owner's module "remains untrained" (summary, Sec. III-C): random
  initialisation, frozen, eval mode. The paper's MNIST flatten layer has 9,216 outputs
  (= 64 x 12 x 12, the Keras MNIST CNN: conv3x3/32 -> conv3x3/64 -> maxpool 2), reachable with
  ``conv_module(1, **PAPER_MNIST_CONV)``; the CPU default pools 4x4 with (16, 32) channels:
  1,152 features, L = 11,520 bits for 28x28 inputs. Pass any frozen module to use another.
* FC module: Linear(L, hidden) -> ReLU -> Dropout -> Linear(hidden, classes), hidden 128 and dropout
  0.5 as the Keras MNIST CNN's dense head; Adam (or SGD) on minibatches drawn without replacement.
* Test records: randomized exactly like training records (``randomize_test=True``; the LATENT layer
  is part of the released DPCNN's input path and every record is some data owner's). False feeds
  the un-randomized bit strings instead.
* Each record is randomized once (a single local release); epochs reuse the same strings.

Audit: what the UER guarantee actually is
-----------------------------------------
LDP needs, for every two inputs x, x' and every output y, Pr[y | x] <= e^eps Pr[y | x']. Bits are
randomized independently, so the worst case over all strings of length L is exactly

    eps_worst = sum_i max( |ln p_i - ln q_i|, |ln(1 - p_i) - ln(1 - q_i)| ),

p_i = Pr[1 | 1], q_i = Pr[1 | 0] at position i (:meth:`BitProbabilities.worst_case_epsilon`;
:func:`pair_epsilon` gives the exact loss between two given strings). For ``rr`` this equals eps,
for ``oue`` and ``moue`` it is <= eps: those are eps-LDP. For ``uer`` with alpha > 1 the per-bit
loss tends to ln(alpha) (group A) and ln((1 + alpha**3)/(1 + alpha)) ~ 2 ln(alpha) (group B) as
eps' -> 0: it does not shrink with eps, so eps_worst ~ 1.5 L ln(alpha) whatever eps is claimed
(about 3.3e4 for the default L = 11,520 and alpha = 7, against a claimed eps of, e.g., 0.5). Only at
alpha = 1 (where UER is OUE) does the claimed bound hold. Not every string encodes some record, so
over real records the loss can only be smaller; :func:`pair_epsilon` gives it exactly for two given
records. Results therefore carry ``eps_claimed``, ``eps_ldp_worst_case`` and ``eps_pair_median``
(the median exact loss between pairs of actual training records).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from dirdp.data import Split

MECHANISMS = ("uer", "moue", "oue", "rr")
SPLITS = ("parity", "halves")

PAPER_MNIST_CONV = dict(channels=(32, 64), kernel=3, pool=2)
"""The conv module that gives the paper's 9,216 MNIST features (the Keras MNIST CNN's)."""


# ------------------------------------------------------------------------------------------ config

@dataclass(frozen=True)
class LatentConfig:
    """Everything that determines the LATENT release of one record.

    ``eps``: the claimed per-record LDP budget (> 0; ``math.inf`` gives Pr[1 | 0] = 0, see the table
    in the module docstring). ``alpha``: the privacy-budget coefficient (> 0). ``int_bits`` (m) and
    ``frac_bits`` (n): bits of the whole and fractional part of each value. ``mechanism``: one of
    ``uer`` (the paper), ``moue``, ``oue``, ``rr``. ``split``: UER's two groups, ``parity`` or
    ``halves``. ``sensitivity``: the divisor of eps per bit, None = the string length r * l.
    ``randomize_test``: whether test records go through the randomizer too. ``std_floor``: the
    smallest std used by the per-record z-score (a constant record maps to all zeros).
    """

    eps: float
    alpha: float = 7.0
    int_bits: int = 2
    frac_bits: int = 7
    mechanism: str = "uer"
    split: str = "parity"
    sensitivity: float | None = None
    randomize_test: bool = True
    std_floor: float = 1e-6

    def __post_init__(self):
        if not (self.eps > 0):
            raise ValueError(f"eps must be > 0 (math.inf allowed). Found eps={self.eps}.")
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise ValueError(f"alpha must be a finite number > 0. Found alpha={self.alpha}.")
        _check_bits(self.int_bits, self.frac_bits)
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {MECHANISMS}. Found mechanism={self.mechanism!r}.")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}. Found split={self.split!r}.")
        if self.sensitivity is not None and not (self.sensitivity > 0):
            raise ValueError(f"sensitivity must be > 0 or None. Found sensitivity={self.sensitivity}.")
        if not (self.std_floor > 0):
            raise ValueError(f"std_floor must be > 0. Found std_floor={self.std_floor}.")

    @property
    def bits_per_value(self) -> int:
        """l = 1 + m + n."""
        return 1 + self.int_bits + self.frac_bits


def _check_bits(int_bits, frac_bits) -> None:
    for name, v in (("int_bits", int_bits), ("frac_bits", frac_bits)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name} must be an integer >= 0. Found {name}={v}.")
    if int_bits + frac_bits < 1 or int_bits + frac_bits > 30:
        raise ValueError(f"int_bits + frac_bits must lie in [1, 30]. Found {int_bits} + {frac_bits}.")


# --------------------------------------------------------------------------------- binary encoding

def max_representable(*, int_bits: int, frac_bits: int) -> float:
    """The largest magnitude the encoding holds: 2**m - 2**-n."""
    _check_bits(int_bits, frac_bits)
    return 2.0 ** int_bits - 2.0 ** -frac_bits


def binary_encode(z: torch.Tensor, *, int_bits: int, frac_bits: int) -> torch.Tensor:
    """Sign-magnitude fixed-point bits of every value, merged per record.

    z [N, k] float -> uint8 [N, k * (1 + m + n)]: for each value, [z < 0] then the m + n bits of
    floor(min(|z|, 2**m - 2**-n) * 2**n), most significant first; values in feature order.
    Decoding gives back z within 2**-n (truncation toward zero) for |z| < 2**m, and
    +-(2**m - 2**-n) beyond (clipping). NaN is rejected.
    """
    _check_bits(int_bits, frac_bits)
    if z.dim() != 2:
        raise ValueError(f"z must be [N, k]. Found shape {tuple(z.shape)}.")
    if torch.isnan(z).any():
        raise ValueError("z has NaN entries; the binary encoding is undefined for them.")
    width = int_bits + frac_bits
    top = max_representable(int_bits=int_bits, frac_bits=frac_bits)
    mag = z.abs().to(torch.float64).clamp(max=top)
    code = torch.floor(mag * 2.0 ** frac_bits).to(torch.int32)  # exact: scaling by a power of two
    shifts = torch.arange(width - 1, -1, -1, dtype=torch.int32, device=z.device)
    magnitude_bits = (code.unsqueeze(-1) >> shifts) & 1
    sign = (z < 0).to(torch.int32).unsqueeze(-1)
    return torch.cat([sign, magnitude_bits], dim=-1).reshape(z.shape[0], -1).to(torch.uint8)


def binary_decode(bits: torch.Tensor, *, int_bits: int, frac_bits: int) -> torch.Tensor:
    """Inverse of :func:`binary_encode` on its grid: uint8/bool/float 0-1 [N, k * l] -> float64 [N, k]."""
    _check_bits(int_bits, frac_bits)
    l = 1 + int_bits + frac_bits
    if bits.dim() != 2 or bits.shape[1] % l:
        raise ValueError(f"bits must be [N, k * {l}]. Found shape {tuple(bits.shape)}.")
    b = bits.reshape(bits.shape[0], -1, l).to(torch.int64)
    weights = 2 ** torch.arange(l - 2, -1, -1, dtype=torch.int64, device=bits.device)
    code = (b[..., 1:] * weights).sum(-1)
    return (1.0 - 2.0 * b[..., 0].to(torch.float64)) * code.to(torch.float64) / 2.0 ** frac_bits


def zscore(features: torch.Tensor, *, std_floor: float = 1e-6) -> torch.Tensor:
    """Per-record z-score: (f - mean_j f_j) / max(std_j f_j, std_floor) over each row's own features
    (population std). Needs nothing but the record itself, as a local randomizer must."""
    f = features.to(torch.float32)
    mean = f.mean(dim=1, keepdim=True)
    std = f.std(dim=1, correction=0, keepdim=True).clamp(min=std_floor)
    return (f - mean) / std


# ------------------------------------------------------------------------------------ randomization

def _sigmoid(t: float) -> float:
    """1 / (1 + e^-t) without overflow, for t in [-inf, inf]."""
    if t >= 0:
        return 1.0 / (1.0 + math.exp(-t))
    e = math.exp(t)
    return e / (1.0 + e)


def _softplus(t: float) -> float:
    """ln(1 + e^t) without overflow, for t in [-inf, inf]."""
    return t + math.log1p(math.exp(-t)) if t > 0 else math.log1p(math.exp(t))


def _directional(lp: float, lq: float) -> tuple[float, float]:
    """For one bit with Pr[1 | 1] = sigmoid(lp) and Pr[1 | 0] = sigmoid(lq) (logits, so that
    probabilities within 1e-16 of 0 or 1 keep their precision): the max over the output bit of
    ln Pr[y | 1] - ln Pr[y | 0], and of ln Pr[y | 0] - ln Pr[y | 1]."""
    if lp == lq:
        return 0.0, 0.0
    one = _softplus(-lq) - _softplus(-lp)  # ln p - ln q
    zero = _softplus(lq) - _softplus(lp)  # ln(1 - p) - ln(1 - q)
    return max(one, zero), max(-one, -zero)


@dataclass(frozen=True)
class BitProbabilities:
    """Per-position probabilities of one mechanism on strings of ``length`` bits.

    ``p_a``/``p_b`` = Pr[out = 1 | in = 1] and ``q_a``/``q_b`` = Pr[out = 1 | in = 0] in group A and
    group B (``n_a`` and ``n_b`` positions; equal values for the one-group mechanisms); ``logits``
    holds ln(p / (1 - p)) of (p_a, q_a, p_b, q_b), from which the epsilons are computed.
    """

    mechanism: str
    split: str
    length: int
    eps: float
    alpha: float
    sensitivity: float
    eps_per_bit: float
    p_a: float
    q_a: float
    p_b: float
    q_b: float
    n_a: int
    n_b: int
    logits: tuple[float, float, float, float]

    def group_a(self, device=None) -> torch.Tensor:
        """bool [length]: True where a position belongs to group A."""
        idx = torch.arange(self.length, device=device)
        return idx % 2 == 0 if self.split == "parity" else idx < self.n_a

    def per_position(self, device=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(Pr[1 | 1], Pr[1 | 0]) as float64 [length] tensors."""
        a = self.group_a(device)
        t = lambda v: torch.tensor(v, dtype=torch.float64, device=device)  # noqa: E731
        return torch.where(a, t(self.p_a), t(self.p_b)), torch.where(a, t(self.q_a), t(self.q_b))

    def directional(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """((up, down) of group A, (up, down) of group B): max over the output bit of
        ln Pr[y | 1] / Pr[y | 0] (up) and of ln Pr[y | 0] / Pr[y | 1] (down)."""
        lpa, lqa, lpb, lqb = self.logits
        return _directional(lpa, lqa), _directional(lpb, lqb)

    def bit_epsilons(self) -> tuple[float, float]:
        """Per-bit LDP loss of group A and of group B: max over inputs and output of |ln ratio|."""
        a, b = self.directional()
        return max(a), max(b)

    def worst_case_epsilon(self) -> float:
        """The exact LDP epsilon of the whole-string release: the max over all pairs of strings of
        length ``length`` and all outputs y of ln Pr[y | x] / Pr[y | x'] = n_a eps_A + n_b eps_B."""
        ea, eb = self.bit_epsilons()
        return (self.n_a * ea if self.n_a else 0.0) + (self.n_b * eb if self.n_b else 0.0)

    def summary(self) -> dict:
        """JSON-friendly: the probabilities, flip probabilities and both epsilons."""
        ea, eb = self.bit_epsilons()
        d = asdict(self)
        d["logits"] = list(self.logits)
        d.update(flip_one_a=1 - self.p_a, flip_zero_a=self.q_a, flip_one_b=1 - self.p_b, flip_zero_b=self.q_b,
                 bit_eps_a=ea, bit_eps_b=eb, eps_ldp_worst_case=self.worst_case_epsilon())
        return d


def uer_probabilities(*, eps: float, length: int, alpha: float = 7.0, mechanism: str = "uer",
                      split: str = "parity", sensitivity: float | None = None) -> BitProbabilities:
    """The keep/flip probabilities of ``mechanism`` on a merged string of ``length`` bits.

    eps' = eps / S with S = ``sensitivity`` or, by default, ``length`` (the paper's r * l). For
    ``uer`` (the paper's utility enhancing randomization), with group A the even positions (or the
    first half) and group B the odd ones (or the second half)::

        Pr[1 | 1] = alpha / (1 + alpha)     (A),     1 / (1 + alpha**3)     (B),
        Pr[1 | 0] = 1 / (1 + alpha e^eps')  (A and B).

    ``moue``: Pr[1 | 1] = 1 / (1 + alpha), Pr[1 | 0] = 1 / (1 + alpha e^eps'); ``oue``: 1/2 and
    1 / (1 + e^eps'); ``rr``: e^eps' / (1 + e^eps') and 1 / (1 + e^eps').

    eps-LDP check (see :meth:`BitProbabilities.worst_case_epsilon`): the whole string is eps-LDP iff
    sum_i max(|ln p_i/q_i|, |ln (1-p_i)/(1-q_i)|) <= eps. ``rr`` meets it with equality; ``oue`` and
    ``moue`` (per bit: ln((1 + alpha e^eps')/(1 + alpha)) <= eps' and ln(e^eps' (1 + alpha)/
    (1 + alpha e^eps')) <= eps') meet it; ``uer`` meets it only for alpha = 1. Raising alpha raises
    Pr[0 | 0] = alpha e^eps' / (1 + alpha e^eps') in every mechanism that has alpha: more zeros kept.
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}. Found mechanism={mechanism!r}.")
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}. Found split={split!r}.")
    if int(length) != length or length < 1:
        raise ValueError(f"length must be an integer >= 1. Found length={length}.")
    if not (eps > 0):
        raise ValueError(f"eps must be > 0 (math.inf allowed). Found eps={eps}.")
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite number > 0. Found alpha={alpha}.")
    s = float(length if sensitivity is None else sensitivity)
    if not (s > 0):
        raise ValueError(f"sensitivity must be > 0. Found sensitivity={sensitivity}.")
    length = int(length)
    x = eps / s  # eps' per bit
    la = math.log(alpha)
    # logits ln(p / (1 - p)) of Pr[1 | 1] and Pr[1 | 0] in groups A and B
    if mechanism == "uer":
        logits = (la, -(la + x), -3 * la, -(la + x))
    elif mechanism == "moue":
        logits = (-la, -(la + x), -la, -(la + x))
    elif mechanism == "oue":
        logits = (0.0, -x, 0.0, -x)
    else:  # rr
        logits = (x, -x, x, -x)
    p_a, q_a, p_b, q_b = (_sigmoid(t) for t in logits)
    n_a = (length + 1) // 2
    return BitProbabilities(mechanism=mechanism, split=split, length=length, eps=float(eps), alpha=float(alpha),
                            sensitivity=s, eps_per_bit=x, p_a=p_a, q_a=q_a, p_b=p_b, q_b=q_b,
                            n_a=n_a, n_b=length - n_a, logits=logits)


def uer(bits: torch.Tensor, *, eps: float, alpha: float = 7.0, generator: torch.Generator,
        mechanism: str = "uer", split: str = "parity", sensitivity: float | None = None) -> torch.Tensor:
    """Randomize every row of ``bits`` (0/1, [N, L]) independently with the probabilities of
    :func:`uer_probabilities` (length L): out_i = [U_i < Pr[1 | bits_i]], U ~ Uniform(0, 1) (float64) from
    ``generator`` (same generator state -> same output). Returns uint8 [N, L]."""
    if bits.dim() != 2:
        raise ValueError(f"bits must be [N, L]. Found shape {tuple(bits.shape)}.")
    probs = uer_probabilities(eps=eps, length=bits.shape[1], alpha=alpha, mechanism=mechanism, split=split,
                              sensitivity=sensitivity)
    return randomize(bits, probs, generator=generator)


def randomize(bits: torch.Tensor, probs: BitProbabilities, *, generator: torch.Generator) -> torch.Tensor:
    """:func:`uer` with precomputed probabilities (``probs.length`` must equal the string length)."""
    if bits.shape[-1] != probs.length:
        raise ValueError(f"bits have length {bits.shape[-1]}, the probabilities are for length {probs.length}.")
    p, q = probs.per_position(bits.device)
    u = torch.rand(bits.shape, generator=generator, device=bits.device, dtype=torch.float64)
    return (u < torch.where(bits.bool(), p, q)).to(torch.uint8)


def pair_epsilon(a: torch.Tensor, b: torch.Tensor, probs: BitProbabilities) -> torch.Tensor:
    """The exact LDP loss between the strings ``a`` and ``b`` (0/1, [N, L] or [L]):
    max over outputs y of |ln Pr[y | a] / Pr[y | b]|, computed as the larger of the two directions,
    each a sum over the positions where a and b differ. Returns float64 [N] (or a scalar)."""
    if a.shape != b.shape or a.shape[-1] != probs.length:
        raise ValueError(f"a and b must have the same shape [..., {probs.length}]. Found {tuple(a.shape)}, "
                         f"{tuple(b.shape)}.")
    (up_a, down_a), (up_b, down_b) = probs.directional()
    grp = probs.group_a(a.device)
    up = torch.where(grp, torch.tensor(up_a, dtype=torch.float64), torch.tensor(up_b, dtype=torch.float64))
    down = torch.where(grp, torch.tensor(down_a, dtype=torch.float64), torch.tensor(down_b, dtype=torch.float64))
    a1, b1 = a.bool(), b.bool()
    zero = torch.zeros((), dtype=torch.float64, device=a.device)
    a_to_b = torch.where(a1 & ~b1, up, zero).sum(-1) + torch.where(~a1 & b1, down, zero).sum(-1)
    b_to_a = torch.where(b1 & ~a1, up, zero).sum(-1) + torch.where(~b1 & a1, down, zero).sum(-1)
    return torch.maximum(a_to_b, b_to_a)


# ---------------------------------------------------------------------------------- the data owner

def conv_module(in_channels: int, *, channels: tuple[int, int] = (16, 32), kernel: int = 3, pool: int = 4,
                seed: int = 0) -> nn.Sequential:
    """The data owner's convolutional module, untrained (PyTorch default initialisation drawn under
    ``seed`` without touching the global generator) and frozen:
    conv k x k/c1 -> ReLU -> conv k x k/c2 -> ReLU -> maxpool ``pool`` -> flatten.

    ``PAPER_MNIST_CONV`` (channels (32, 64), pool 2) gives the paper's 9,216 MNIST features; the
    default gives 6 x 6 x 32 = 1,152 for 28 x 28 inputs."""
    c1, c2 = channels
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = nn.Sequential(nn.Conv2d(in_channels, c1, kernel), nn.ReLU(), nn.Conv2d(c1, c2, kernel), nn.ReLU(),
                            nn.MaxPool2d(pool), nn.Flatten())
    net.requires_grad_(False)
    return net.eval()


@torch.no_grad()
def latent_bits(conv: nn.Module, x: torch.Tensor, cfg: LatentConfig) -> torch.Tensor:
    """The LATENT layer before randomization: conv -> flatten -> per-record z-score -> binary encode
    -> merge. x [N, C, H, W] -> uint8 [N, k * l]."""
    feats = conv(x).flatten(1)
    return binary_encode(zscore(feats, std_floor=cfg.std_floor), int_bits=cfg.int_bits, frac_bits=cfg.frac_bits)


@torch.no_grad()
def encode_dataset(conv: nn.Module, split: Split, cfg: LatentConfig, *, generator: torch.Generator,
                   batch: int = 1000, randomize_bits: bool = True) -> torch.Tensor:
    """The LDP release of every record of ``split``: each record's bit string, randomized once with
    ``cfg``'s mechanism (``randomize_bits=False``: the clean strings). Every row depends only on its
    own record (and the generator). Returns uint8 [N, L] on the split's device."""
    if batch < 1:
        raise ValueError(f"batch must be >= 1. Found batch={batch}.")
    was_training = conv.training
    conv.eval()
    out, probs = [], None
    for i in range(0, len(split), batch):
        bits = latent_bits(conv, split.x[i:i + batch], cfg)
        if randomize_bits:
            if probs is None:
                probs = cfg_probabilities(cfg, bits.shape[1])
            bits = randomize(bits, probs, generator=generator)
        out.append(bits)
    conv.train(was_training)
    return torch.cat(out) if out else torch.empty(0, 0, dtype=torch.uint8)


def cfg_probabilities(cfg: LatentConfig, length: int) -> BitProbabilities:
    """:func:`uer_probabilities` for ``cfg`` on strings of ``length`` bits."""
    return uer_probabilities(eps=cfg.eps, length=length, alpha=cfg.alpha, mechanism=cfg.mechanism, split=cfg.split,
                             sensitivity=cfg.sensitivity)


# ------------------------------------------------------------------------------------- the service

def fc_module(length: int, num_classes: int, *, hidden: int = 128, dropout: float = 0.5) -> nn.Sequential:
    """The fully connected module trained on the released strings."""
    return nn.Sequential(nn.Linear(length, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, num_classes))


@torch.no_grad()
def _accuracy(model: nn.Module, bits: torch.Tensor, y: torch.Tensor, batch: int = 2000) -> float:
    was_training = model.training
    model.eval()
    correct = sum(int((model(bits[i:i + batch].float()).argmax(1) == y[i:i + batch]).sum())
                  for i in range(0, len(y), batch))
    model.train(was_training)
    return 100.0 * correct / max(len(y), 1)


def train_latent(*, train: Split, test: Split, num_classes: int, cfg: LatentConfig,
                 conv_module: nn.Module | None = None, steps: int = 2000, batch_size: int = 128, lr: float = 1e-3,
                 optimizer: str = "adam", hidden: int = 128, dropout: float = 0.5, seed: int = 0,
                 eval_every: int = 500, log_every: int = 50, encode_batch: int = 1000, pair_sample: int = 200,
                 progress: bool = False) -> dict:
    """LATENT end to end: release every training (and test) record once through the LATENT layer,
    then train the FC module on the released strings for ``steps`` minibatch steps (shuffled
    epochs) with ``optimizer`` ("adam" or "sgd") at ``lr``.

    ``conv_module``: the data owner's frozen module (None: :func:`conv_module` for the training
    images' channels, seeded with ``seed``). Returns a record with ``test_accuracy`` (%, last
    evaluation), ``accuracy_curve`` [[step, acc]], ``loss_curve`` [[step, mean loss]], the string
    length, the per-bit probabilities (``probabilities``), ``eps_claimed`` (the paper's per-record
    LDP claim), ``eps_ldp_worst_case`` (the exact LDP epsilon of the release), and
    ``eps_pair_median``: the median exact loss between ``pair_sample`` pairs of actual training
    records (consecutive records' clean strings).
    """
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd'. Found optimizer={optimizer!r}.")
    for name, v in (("steps", steps), ("batch_size", batch_size), ("eval_every", eval_every),
                    ("log_every", log_every)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be an integer >= 1. Found {name}={v}.")
    if len(train) == 0 or len(test) == 0:
        raise ValueError(f"train and test must be non-empty. Found {len(train)} and {len(test)} records.")
    t0 = time.perf_counter()
    device = train.x.device
    conv = conv_module if conv_module is not None else conv_module_default(train.x.shape[1], seed)
    conv = conv.to(device)
    g_train = torch.Generator(device=device).manual_seed(10_007 * seed + 11)
    g_test = torch.Generator(device=device).manual_seed(10_007 * seed + 12)
    g_batch = torch.Generator().manual_seed(10_007 * seed + 13)

    train_bits = encode_dataset(conv, train, cfg, generator=g_train, batch=encode_batch)
    test_bits = encode_dataset(conv, test, cfg, generator=g_test, batch=encode_batch,
                               randomize_bits=cfg.randomize_test)
    length = train_bits.shape[1]
    probs = cfg_probabilities(cfg, length)
    n_pairs = min(pair_sample, len(train) - 1)
    if n_pairs >= 1:
        clean = encode_dataset(conv, Split(train.x[:n_pairs + 1], train.y[:n_pairs + 1]), cfg, generator=g_train,
                               randomize_bits=False)
        eps_pair = float(pair_epsilon(clean[:-1], clean[1:], probs).median())
    else:
        eps_pair = None
    encode_s = time.perf_counter() - t0

    with torch.random.fork_rng(devices=[device.index or 0] if device.type == "cuda" else []):
        torch.manual_seed(seed)  # FC initialisation and dropout
        model = fc_module(length, num_classes, hidden=hidden, dropout=dropout).to(device)
        opt = (torch.optim.Adam if optimizer == "adam" else torch.optim.SGD)(model.parameters(), lr=lr)
        n = len(train)
        order, pos = torch.randperm(n, generator=g_batch), 0
        loss_curve, acc_curve = [], []
        loss_sum, loss_n = 0.0, 0
        bar = None
        if progress:
            from dirdp.training import progress_bar

            bar = progress_bar(total=steps, desc=f"LATENT {cfg.mechanism} eps={cfg.eps:g} alpha={cfg.alpha:g}")
        model.train()
        for step in range(steps):
            if pos + batch_size > n and pos > 0:  # new epoch: a fresh permutation
                order, pos = torch.randperm(n, generator=g_batch), 0
            idx = order[pos:pos + batch_size].to(device)
            pos += batch_size
            loss = F.cross_entropy(model(train_bits[idx].float()), train.y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += float(loss.detach())
            loss_n += 1
            done = step + 1
            if done % log_every == 0 or done == steps:
                loss_curve.append([done, round(loss_sum / loss_n, 5)])
                loss_sum, loss_n = 0.0, 0
            if done % eval_every == 0 or done == steps:
                acc_curve.append([done, _accuracy(model, test_bits, test.y)])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=loss_curve[-1][1] if loss_curve else None,
                                test_acc=acc_curve[-1][1] if acc_curve else None, refresh=False)
        if bar is not None:
            bar.close()
        train_acc = _accuracy(model, train_bits, train.y)
    wall = time.perf_counter() - t0
    return dict(
        method="latent", guarantee="local DP per record (as claimed by the paper; see eps_ldp_worst_case)",
        mechanism=cfg.mechanism, split=cfg.split, alpha=cfg.alpha,
        eps_claimed=cfg.eps, eps_per_bit=probs.eps_per_bit, sensitivity=probs.sensitivity,
        eps_ldp_worst_case=probs.worst_case_epsilon(), eps_pair_median=eps_pair,
        int_bits=cfg.int_bits, frac_bits=cfg.frac_bits, bits_per_value=cfg.bits_per_value,
        n_features=length // cfg.bits_per_value, string_length=length, randomize_test=cfg.randomize_test,
        probabilities=probs.summary(), ones_fraction_released=float(train_bits.float().mean()),
        n_train=len(train), n_test=len(test), steps=steps, batch_size=batch_size, lr=lr, optimizer=optimizer,
        hidden=hidden, dropout=dropout, seed=seed,
        test_accuracy=acc_curve[-1][1], train_accuracy=train_acc,
        accuracy_curve=acc_curve, loss_curve=loss_curve,
        encode_time_s=round(encode_s, 3), wall_time_s=round(wall, 3),
    )


def conv_module_default(in_channels: int, seed: int) -> nn.Sequential:
    """:func:`conv_module` at its defaults (the name ``conv_module`` is shadowed inside
    :func:`train_latent` by its argument)."""
    return conv_module(in_channels, seed=seed)
