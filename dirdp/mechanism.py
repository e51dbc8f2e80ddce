"""The Dirichlet mechanism (Mechanism 8) on softmax outputs and the loss of Algorithm 1.

Algorithm 1, lines 4-7: s = softmax(z); p~ ~ Dir(r s + alpha 1_d); loss = -log p~_y.
"""

from __future__ import annotations

import torch


def _log_gamma_rsample(concentration: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """log G with G ~ Gamma(concentration, 1) elementwise, reparameterised, never -inf.

    Uses Gamma(a) = Gamma(a + 1) * U^(1/a) with U ~ Uniform(0, 1] (Marsaglia & Tsang's boost),
    so log G = log G' + log(U) / a never underflows, even at alpha = 0.1 in float32 where a
    plain Gamma(a) draw is 0 with probability ~1e-4. Gradients flow to ``concentration``
    through the implicit reparameterisation of ``torch._standard_gamma`` (the sampler behind
    ``torch.distributions.Gamma.rsample``, which also takes a Generator) and through log(U)/a.
    """
    g = torch._standard_gamma(concentration + 1.0, generator=generator)
    u = torch.rand(concentration.shape, dtype=concentration.dtype, device=concentration.device, generator=generator)
    return torch.log(g) + torch.log1p(-u) / concentration  # 1 - u lies in (0, 1]


def log_dirichlet_rsample(concentration: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """log p~ for p~ ~ Dir(concentration) along the last axis (normalised Gamma draws), in log space."""
    log_g = _log_gamma_rsample(concentration, generator)
    return log_g - torch.logsumexp(log_g, dim=-1, keepdim=True)


def dirichlet_nll(
    logits: torch.Tensor,
    target: torch.Tensor,
    *,
    r: float,
    alpha: float,
    generator: torch.Generator | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Loss of Algorithm 1 (lines 4-7): -log p~_y with p~ ~ Dir(r softmax(z) + alpha 1_d).

    ``logits`` is [batch, d], ``target`` [batch] of class indices. The mechanism always runs in
    float32 (autocast is switched off inside), so bf16 logits from an autocast region are safe.
    ``reduction`` is "mean" (line 7's average over the batch), "sum" or "none".

    What its epsilon (:func:`dirdp.rstar`) covers: the released samples p~, not the trained model (see
    :mod:`dirdp.audit`).
    """
    if not (alpha > 0 and r > 0):
        raise ValueError(f"the Dirichlet mechanism needs r > 0 and alpha > 0. Found r={r}, alpha={alpha}.")
    with torch.autocast(device_type=logits.device.type, enabled=False):
        s = torch.softmax(logits.float(), dim=-1)
        log_g = _log_gamma_rsample(r * s + alpha, generator)
        # -log p~_y = log(1 + sum_{j != y} G_j / G_y), written as softplus so that a loss near
        # 0 (p~_y near 1) keeps its relative precision in float32
        y = target.long().unsqueeze(-1)
        is_y = torch.zeros_like(log_g, dtype=torch.bool).scatter(-1, y, True)  # no host sync, unlike one_hot
        log_g_y = log_g.gather(-1, y).squeeze(-1)
        log_rest = torch.logsumexp(log_g.masked_fill(is_y, float("-inf")), dim=-1)
        loss = torch.nn.functional.softplus(log_rest - log_g_y)
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none'. Found {reduction!r}.")
