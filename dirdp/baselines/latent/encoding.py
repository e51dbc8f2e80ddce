"""The data owner's side of LATENT: the frozen conv module, the per-record z-score, the sign-magnitude
binary encoding, and the release of a whole split (each record randomized once). See
:mod:`dirdp.baselines.latent`."""

from __future__ import annotations

import torch
from torch import nn

from dirdp.baselines.latent.config import LatentConfig, _check_bits
from dirdp.baselines.latent.randomizer import BitProbabilities, randomize, uer_probabilities
from dirdp.data import Split

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


def conv_module_default(in_channels: int, seed: int) -> nn.Sequential:
    """:func:`conv_module` at its defaults (the name ``conv_module`` is shadowed inside
    :func:`train_latent` by its argument)."""
    return conv_module(in_channels, seed=seed)
