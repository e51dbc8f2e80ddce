"""LATENT's randomizers (RR, OUE, MOUE, UER) as per-position bit probabilities, and the exact LDP loss of a
release (worst case over all strings, or between two given strings). See :mod:`dirdp.baselines.latent`."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from dirdp.baselines.latent.config import MECHANISMS, SPLITS

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

