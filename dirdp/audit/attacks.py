"""Attacks on what training releases: exact reconstruction from a dense first layer's update,
gradient inversion (Geiping et al. 2020) scored by PSNR and SSIM, and the loss-threshold membership
inference attack (Yeom et al. 2018).

- :func:`reconstruct_dense_first_layer`: for a model whose first layer is dense (W1 x + b1), one
  update on one example gives Delta W1[j] = c_j x^T and Delta b1[j] = c_j for every hidden unit j
  (same scalar c_j, whatever the loss), so x = Delta W1[j] / Delta b1[j] exactly, whatever the
  Dirichlet sample was.
- :func:`invert_gradients`: gradient inversion by optimisation for convolutional models, scored by
  :func:`psnr` and :func:`ssim` after matching the batch's order (:func:`match_to_truth`).
- :func:`loss_threshold_attack`: black-box membership inference, AUC and TPR at low FPR
  (:func:`dirdp.audit.stats.roc_at`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dirdp.audit.stats import roc_at


def mlp(*, d_in: int = 784, hidden: int = 100, num_classes: int = 10) -> nn.Sequential:
    """The 784-100-10 MLP of the reconstruction audit (flatten -> dense -> ReLU -> dense)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))


def reconstruct_dense_first_layer(delta_weight: torch.Tensor, delta_bias: torch.Tensor) -> torch.Tensor:
    """The input of a one-example update from the first dense layer's update: for a unit j with
    Delta b[j] != 0, Delta W[j] = Delta b[j] x, so x = Delta W[j] / Delta b[j]. Uses the unit with the
    largest |Delta b[j]| (the best-conditioned ratio). Returns x flattened, [d_in]."""
    j = int(delta_bias.abs().argmax())
    if delta_bias[j] == 0:
        raise ValueError("the update's first-layer bias did not move: no unit carries the input.")
    return delta_weight[j] / delta_bias[j]


def psnr(x_hat: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Peak signal-to-noise ratio (dB) per image, on the images' own range (max - min of x)."""
    rng = (x.flatten(1).max(1).values - x.flatten(1).min(1).values).clamp(min=1e-12)
    mse = ((x_hat - x) ** 2).flatten(1).mean(1).clamp(min=1e-20)
    return 10 * torch.log10(rng ** 2 / mse)


def ssim(x_hat: torch.Tensor, x: torch.Tensor, *, window: int = 7, sigma: float = 1.5) -> torch.Tensor:
    """Structural similarity (Wang et al. 2004) per image, Gaussian window, images rescaled to x's
    range [0, 1]; constants K1 = 0.01, K2 = 0.03."""
    lo = x.flatten(1).min(1).values.view(-1, 1, 1, 1)
    hi = x.flatten(1).max(1).values.view(-1, 1, 1, 1)
    a, b = (x_hat - lo) / (hi - lo), (x - lo) / (hi - lo)
    k = torch.exp(-((torch.arange(window) - window // 2) ** 2) / (2 * sigma ** 2)).to(x.dtype)
    k = (k[:, None] * k[None, :]) / k.sum() ** 2
    c = x.shape[1]
    w = k.expand(c, 1, window, window)

    def blur(t):
        return F.conv2d(t, w, groups=c)

    mu_a, mu_b = blur(a), blur(b)
    var_a, var_b = blur(a * a) - mu_a ** 2, blur(b * b) - mu_b ** 2
    cov = blur(a * b) - mu_a * mu_b
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    s = ((2 * mu_a * mu_b + c1) * (2 * cov + c2)) / ((mu_a ** 2 + mu_b ** 2 + c1) * (var_a + var_b + c2))
    return s.flatten(1).mean(1)


def logit_grad_from_update(grads: list[torch.Tensor]) -> torch.Tensor:
    """For a network ending in a biased linear layer, the batch-mean gradient of the loss with
    respect to the logits is that bias's gradient (the last parameter's): for one example it *is*
    the example's logit gradient, Dirichlet sample and all. Returns [1, num_classes]."""
    return grads[-1].reshape(1, -1)


def invert_gradients(model: nn.Module, observed: list[torch.Tensor], shape: tuple[int, ...], *,
                     logit_grad: torch.Tensor | None = None, steps: int = 1000, lr: float = 0.1, tv: float = 1e-2,
                     bounds: tuple[float, float] | None = None, seed: int = 0) -> torch.Tensor:
    """Gradient inversion in the style of Geiping et al. (2020, "Inverting gradients"): find a batch
    x whose parameter gradient has the largest cosine similarity with the ``observed`` one, with a
    total-variation prior; Adam on signed gradients, step size divided by 10 at 3/8, 5/8 and 7/8 of
    the run, x clipped to ``bounds``.

    The loss's gradient with respect to the logits is unknown to the attacker for a batch (it holds
    the Dirichlet samples), so it is a free variable g [batch, classes] optimised with x: the
    surrogate sum_i <g_i, f(x_i)> has parameter gradient sum_i J_i^T g_i, which is the true
    gradient's form for *any* loss. ``logit_grad`` fixes g (one example: :func:`logit_grad_from_update`).
    Cosine similarity is scale free, so the attacker needs neither lr, r, alpha nor the sample."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g).requires_grad_(True)
    free_g = logit_grad is None
    out_dim = observed[-1].numel()
    lg = (0.1 * torch.randn(shape[0], out_dim, generator=g)).requires_grad_(True) if free_g else logit_grad.detach()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam([x, lg] if free_g else [x], lr=lr)
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=[steps * 3 // 8, steps * 5 // 8, steps * 7 // 8],
                                                 gamma=0.1)
    norm_obs = torch.sqrt(sum((o ** 2).sum() for o in observed))
    for _ in range(steps):
        opt.zero_grad()
        surrogate = (model(x) * lg).sum() / shape[0]
        grads = torch.autograd.grad(surrogate, params, create_graph=True)
        dot = sum((gr * o).sum() for gr, o in zip(grads, observed))
        norm = torch.sqrt(sum((gr ** 2).sum() for gr in grads))
        loss = 1 - dot / (norm * norm_obs + 1e-12)
        loss = loss + tv * ((x[..., 1:, :] - x[..., :-1, :]).abs().mean() + (x[..., :, 1:] - x[..., :, :-1]).abs().mean())
        loss.backward()
        x.grad.sign_()
        opt.step()
        sched.step()
        if bounds is not None:
            with torch.no_grad():
                x.clamp_(*bounds)
    return x.detach()


def match_to_truth(found: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """A batch's update is the same for every order of its examples, so an inversion finds the batch
    in some order: reorder ``found`` by the assignment that maximises the total SSIM with ``truth``
    (Hungarian method), as gradient-inversion evaluations do, before scoring image by image. With more
    candidates than images (one per unit of a dense layer), each image gets a distinct one: ``len(truth)``
    of ``found``, in ``truth``'s order."""
    from scipy.optimize import linear_sum_assignment

    n, b = len(found), len(truth)
    if n == b == 1:
        return found
    if n < b:
        raise ValueError(f"{n} candidate(s) for {b} images: each image needs one of its own")
    pairs = ssim(found.repeat_interleave(b, 0), truth.repeat(n, 1, 1, 1)).view(n, b)  # [found i, truth j]
    rows, cols = linear_sum_assignment(pairs.numpy(), maximize=True)
    order = torch.empty(b, dtype=torch.long)
    order[torch.as_tensor(cols)] = torch.as_tensor(rows)
    return found[order]


@torch.no_grad()
def loss_threshold_attack(model: nn.Module, members, non_members, *, batch: int = 1000) -> dict:
    """Black-box membership inference (Yeom et al. 2018): score = -cross-entropy of the true label;
    members (training records) should score higher. Returns :func:`roc_at` of the two score sets."""
    was = model.training
    model.eval()

    def scores(split):
        return torch.cat([-F.cross_entropy(model(split.x[i:i + batch]), split.y[i:i + batch], reduction="none")
                          for i in range(0, len(split), batch)])

    res = roc_at(scores(members), scores(non_members))
    model.train(was)
    return res


