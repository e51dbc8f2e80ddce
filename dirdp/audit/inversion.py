"""Reconstruction of private images from one training update.

Section 3.3 of the paper argues that backpropagation "uses only E_B and not D_B", so the update is
post-processing of the Dirichlet samples. The parameter gradient is

    d(-log p~_y)/d theta = (d loss / d p~)(d p~ / d eta) r (d s / d z)(d z / d theta),

and d z / d theta is evaluated at the private input x. :func:`dense_reconstruction` reads x back
exactly from one Algorithm-1 step on a dense first layer (and, the control, gives noise from DP-SGD's step at the
same claim); :func:`inversion_experiment` runs gradient
inversion (:func:`dirdp.audit.attacks.invert_gradients`) on one step of Algorithm 1 or DP-SGD at
the same claimed epsilon (calibrated by :func:`dirdp.audit.canary._noise_for`).
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

from dirdp import methods
from dirdp.audit.attacks import (invert_gradients, logit_grad_from_update, match_to_truth, mlp, psnr,
                                 reconstruct_dense_first_layer, ssim)
from dirdp.audit.canary import _noise_for


def dense_reconstruction(images: torch.Tensor, labels: torch.Tensor, *, eps: float, delta: float,
                         method: str = methods.ALG1, batch_size: int = 1, alpha: float = 3.0, q: float = 0.005,
                         steps: int = 20000, n_train: int = 60000, seed: int = 0) -> tuple[list[dict], torch.Tensor]:
    """The analytic reconstruction from one step of ``method`` at claimed ``eps`` (with q, T = ``steps``: Algorithm 1
    at r* of Eq. (1), r* = 0.2349 at eps = 1 here; DP-SGD at the noise multiplier its accountant calibrates, its
    update divided by the expected batch q ``n_train`` as training divides it), on a fresh :func:`mlp` per batch
    (``torch.manual_seed(seed + first image)``), the images in batches of ``batch_size`` (a remainder left out).

    Unit j of the first layer moves by Delta W1[j] = sum_i c_ij x_i and Delta b1[j] = sum_i c_ij, so
    Delta W1[j] / Delta b1[j] is the input of a one-record step (batch 1: the unit with the largest |Delta b1[j]|,
    :func:`reconstruct_dense_first_layer`, exact for Algorithm 1 whatever the Dirichlet sample was), and in a batch it
    is one image exactly wherever unit j is active for that image alone, else a mixture. In a batch each image is
    scored at its own candidate among the units' (:func:`match_to_truth`: the truth picks them, as inversion
    evaluations match found images to the truth). DP-SGD's ratio is one of two noisy entries. Returns one row per image
    (``attack`` "dense_first_layer", ``model`` "mlp", ``candidates``: the units that moved; the largest error relative
    to the image's largest |pixel|, PSNR, SSIM) and the reconstructions, shaped like the images used."""
    noise = _noise_for(method, eps=eps, q=q, steps=steps, delta=delta, alpha=alpha)
    dirichlet = methods.audited(method) == methods.DIRICHLET
    kw = dict(r=noise.r) if dirichlet else dict(noise_multiplier=noise.noise_multiplier, expected_batch=q * n_train)
    rows, found = [], []
    for start in range(0, len(images) - len(images) % batch_size, batch_size):
        torch.manual_seed(seed + start)
        net = mlp()
        x, y = images[start:start + batch_size], labels[start:start + batch_size]
        grad_w, grad_b = _parameter_update(net, x, y, method=method, alpha=alpha,
                                           generator=torch.Generator().manual_seed(seed + start), **kw)[:2]
        moved = grad_b != 0
        if batch_size == 1:
            x_hat = reconstruct_dense_first_layer(grad_w, grad_b).view_as(x)
        else:
            x_hat = match_to_truth((grad_w[moved] / grad_b[moved, None]).view(-1, *x.shape[1:]), x)
        found.append(x_hat)
        for i in range(len(x)):
            rows.append(dict(attack="dense_first_layer", model="mlp", width=1.0, method=method, image=start + i,
                             batch_size=batch_size, candidates=int(moved.sum()), claimed_eps=eps, q=q, T=steps,
                             rstar=noise.r, noise_multiplier=noise.noise_multiplier,
                             max_rel_error=float((x_hat[i] - x[i]).abs().max() / x[i].abs().max()),
                             psnr=float(psnr(x_hat[i:i + 1], x[i:i + 1])), ssim=float(ssim(x_hat[i:i + 1], x[i:i + 1]))))
    return rows, torch.cat(found) if found else images[:0].clone()


def _parameter_update(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, method: str, r: float | None = None,
                      alpha: float = 3.0, noise_multiplier: float = 0.0, max_grad_norm: float = 1.0,
                      expected_batch: float | None = None, generator: torch.Generator) -> list[torch.Tensor]:
    """The gradient one step applies (the update divided by -lr) on the batch (x, y): Algorithm 1's
    batch-mean Dirichlet loss, or DP-SGD's per-example clipped gradients summed, plus
    N(0, sigma^2 C^2) noise, divided by the expected batch size q n (``expected_batch``)."""
    from dirdp.mechanism import dirichlet_nll

    params = [p for p in model.parameters() if p.requires_grad]
    if methods.audited(method) == methods.DIRICHLET:  # else CLIPPED; a ValueError for a method the audit does not train
        loss = dirichlet_nll(model(x), y, r=r, alpha=alpha, generator=generator)
        return [gr.detach() for gr in torch.autograd.grad(loss, params)]
    total = [torch.zeros_like(p) for p in params]
    for i in range(len(x)):  # per-example gradients (batches here are small)
        gi = torch.autograd.grad(F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]), params)
        scale = min(1.0, max_grad_norm / float(torch.sqrt(sum((t ** 2).sum() for t in gi)) + 1e-12))
        total = [a + scale * b for a, b in zip(total, gi)]
    return [(a + noise_multiplier * max_grad_norm * torch.randn(a.shape, generator=generator)) / expected_batch
            for a in total]


def inversion_experiment(model_fn, images: torch.Tensor, labels: torch.Tensor, *, method: str, batch_sizes=(1, 8, 32),
                         eps: float = 1.0, q: float = 0.005, steps_T: int = 20000, delta: float = 1e-5,
                         alpha: float = 3.0, attack_steps: int = 1000, n_train: int = 60000, seed: int = 0
                         ) -> tuple[list[dict], dict[int, tuple[torch.Tensor, torch.Tensor]]]:
    """Gradient inversion of one training step of ``method`` at claimed ``eps`` (with q, T of the
    protocol: Algorithm 1 at its r*, DP-SGD at its calibrated noise multiplier, both for eps), on a
    freshly initialised ``model_fn()`` (the first step of training), for each batch size. Returns one
    row per batch size (PSNR and SSIM per image after :func:`match_to_truth`, mean and median) and
    {batch size: (truth, found)}."""
    from dirdp.baselines import dpsgd

    noise = _noise_for(method, eps=eps, q=q, steps=steps_T, delta=delta, alpha=alpha)
    kw: dict = dict(method=method, alpha=alpha)
    dirichlet = methods.audited(method) == methods.DIRICHLET
    if dirichlet:
        kw["r"] = noise.r
    else:
        kw.update(noise_multiplier=noise.noise_multiplier, expected_batch=q * n_train)
    param = dict(rstar=noise.r, noise_multiplier=noise.noise_multiplier)
    lo, hi = float(images.min()), float(images.max())
    rows, pictures, start = [], {}, 0
    for b in batch_sizes:
        x, y = images[start:start + b], labels[start:start + b]
        start += b
        torch.manual_seed(seed)
        model = model_fn()
        if not dirichlet:  # DP-SGD's model: BatchNorm -> GroupNorm, as its spec declares
            model = dpsgd.make_compatible(model)
        model.train()
        gen = torch.Generator().manual_seed(seed + b)
        t0 = time.perf_counter()
        observed = _parameter_update(model, x, y, generator=gen, **kw)
        known = logit_grad_from_update(observed) if b == 1 and dirichlet else None
        found = match_to_truth(invert_gradients(model, observed, tuple(x.shape), logit_grad=known,
                                                steps=attack_steps, bounds=(lo, hi), seed=seed), x)
        p, s = psnr(found, x), ssim(found, x)
        rows.append(dict(attack="gradient_inversion", method=method, batch_size=b, claimed_eps=eps, q=q, T=steps_T,
                         **param,
                         psnr_mean=float(p.mean()), psnr_median=float(p.median()), ssim_mean=float(s.mean()),
                         ssim_median=float(s.median()), attack_steps=attack_steps,
                         logit_gradient="read from the update" if known is not None else "optimised",
                         wall_time_s=round(time.perf_counter() - t0, 1)))
        pictures[b] = (x, found)
    return rows, pictures
