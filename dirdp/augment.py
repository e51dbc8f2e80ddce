"""Data augmentation of Section 4.1.2 (CIFAR-10), batched on the device, drawn from the run's generator."""

from __future__ import annotations

import torch


def random_crop_flip(x: torch.Tensor, generator: torch.Generator, padding: int = 4) -> torch.Tensor:
    """CIFAR-10 augmentation of Section 4.1.2 on a whole batch: zero-pad by ``padding``, crop
    back to H x W at a random offset per image, flip each image horizontally with probability 1/2."""
    b, _, h, w = x.shape
    dev = x.device
    padded = torch.nn.functional.pad(x, (padding,) * 4)
    oy = torch.randint(0, 2 * padding + 1, (b,), device=dev, generator=generator)
    ox = torch.randint(0, 2 * padding + 1, (b,), device=dev, generator=generator)
    flip = torch.rand(b, device=dev, generator=generator) < 0.5
    rows = (oy[:, None] + torch.arange(h, device=dev))[:, None, :, None]
    cols = torch.arange(w, device=dev).expand(b, w)
    cols = torch.where(flip[:, None], cols.flip(1), cols) + ox[:, None]
    bidx = torch.arange(b, device=dev)[:, None, None, None]
    cidx = torch.arange(x.shape[1], device=dev)[None, :, None, None]
    return padded[bidx, cidx, rows, cols[:, None, None, :]]
