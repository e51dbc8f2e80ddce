"""Theorem 11 and Sections 3.5-3.6: how the Dirichlet mechanism shapes training.

For logits z with true-class probability s_y = softmax(z)_y, d classes and mechanism (r, alpha):

- kappa(z; r, alpha) = r s_y psi'(r s_y + alpha)                       Eq. (3)
- F(z) = E[-log p~_y] = psi(r + d alpha) - psi(r s_y + alpha)           Eq. (4)
- E[d loss / d z_j] = kappa (s_j - delta_yj)                            Theorem 11
- Var[-log p~_y] = psi'(r s_y + alpha) - psi'(r + d alpha)              Eq. (5)
- gamma_eff = gamma kappa                                               Eq. (6)

All functions are numpy-vectorised over their arguments. :func:`monte_carlo_check` estimates
the same quantities by sampling the mechanism as training does (``dirdp.mechanism``).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy import special

from dirdp.mechanism import dirichlet_nll


def kappa(*, s_y, r, alpha):
    """Attenuation factor of Eq. (3): kappa = r s_y psi'(r s_y + alpha)."""
    s_y, r, alpha = (np.asarray(v, dtype=np.float64) for v in (s_y, r, alpha))
    return r * s_y * special.polygamma(1, r * s_y + alpha)


def expected_loss(*, s_y, r, alpha, d):
    """F(z) of Eq. (4): psi(r + d alpha) - psi(r s_y + alpha)."""
    s_y, r, alpha, d = (np.asarray(v, dtype=np.float64) for v in (s_y, r, alpha, d))
    return special.digamma(r + d * alpha) - special.digamma(r * s_y + alpha)


def loss_variance(*, s_y, r, alpha, d):
    """Var[-log p~_y] of Eq. (5): psi'(r s_y + alpha) - psi'(r + d alpha)."""
    s_y, r, alpha, d = (np.asarray(v, dtype=np.float64) for v in (s_y, r, alpha, d))
    return special.polygamma(1, r * s_y + alpha) - special.polygamma(1, r + d * alpha)


def effective_lr(*, lr, s_y, r, alpha):
    """Effective learning rate of Eq. (6): gamma_eff = gamma kappa (Section 3.6 uses s_y = 0.9)."""
    return np.asarray(lr, dtype=np.float64) * kappa(s_y=s_y, r=r, alpha=alpha)


def asymptotic_kappa(*, s_y, r, alpha, regime: str):
    """Leading term of kappa (Appendix C.1) from psi'(x) ~ 1/x^2 (x -> 0) or psi'(x) ~ 1/x (x -> inf):

    - regime "small" (r s_y + alpha -> 0):   kappa ~ r s_y / (r s_y + alpha)^2
    - regime "large" (r s_y + alpha -> inf): kappa ~ r s_y / (r s_y + alpha)

    With r = c alpha, as Appendix C.1 assumes, these are c s_y / ((1 + c s_y)^2 alpha) ~ alpha^-1 and
    the constant c s_y / (1 + c s_y). But r* of Eq. (1) is ~ c alpha only as alpha -> 0 (there the
    per-step RDP of Lemma 9 depends on r / alpha alone). As alpha -> inf, eps_M(lambda) -> lambda r^2 / alpha,
    so r* ~ c' sqrt(alpha) and kappa ~ c' s_y / sqrt(alpha): at a fixed budget kappa keeps falling like
    alpha^-1/2 and does not saturate as Appendix C.1 states (``notebooks/theorem11_kappa_variance``).
    """
    s_y, r, alpha = (np.asarray(v, dtype=np.float64) for v in (s_y, r, alpha))
    x = r * s_y + alpha
    if regime == "small":
        return r * s_y / x**2
    if regime == "large":
        return r * s_y / x
    raise ValueError(f"regime must be 'small' or 'large'. Found {regime!r}.")


def asymptotic_variance(*, s_y, r, alpha, d, regime: str):
    """Leading term of Var[-log p~_y] (Appendix C.1):

    - regime "small": (r s_y + alpha)^-2 - (r + d alpha)^-2   (~ alpha^-2 when r = c alpha)
    - regime "large": (r s_y + alpha)^-1 - (r + d alpha)^-1   (~ alpha^-1 for r = c alpha or r ~ sqrt(alpha))
    """
    s_y, r, alpha, d = (np.asarray(v, dtype=np.float64) for v in (s_y, r, alpha, d))
    x, tau = r * s_y + alpha, r + d * alpha
    if regime == "small":
        return x**-2 - tau**-2
    if regime == "large":
        return 1 / x - 1 / tau
    raise ValueError(f"regime must be 'small' or 'large'. Found {regime!r}.")


def logits_with_true_prob(*, s_y: float, d: int, generator: torch.Generator, y: int = 0) -> torch.Tensor:
    """Logits z in R^d (float64) with softmax(z)_y = s_y and a uniformly random split of 1 - s_y
    over the other d - 1 classes (normalised Exp(1) draws)."""
    e = -torch.log1p(-torch.rand(d - 1, dtype=torch.float64, generator=generator))
    p = torch.empty(d, dtype=torch.float64)
    p[y] = s_y
    p[torch.arange(d) != y] = (1 - s_y) * e / e.sum()
    return p.log()


def monte_carlo_check(
    *, s_y: float, r: float, alpha: float, d: int, draws: int, generator: torch.Generator, y: int = 0,
    bf16: bool = False,
) -> list[dict]:
    """Monte-Carlo test of Theorem 11 with the training mechanism itself.

    Draws ``draws`` independent losses -log p~_y at fixed logits z (float32, as in training),
    back-propagates to get per-draw logit gradients, and returns one row per statistic:
    the mean loss (Eq. 4), the loss variance (Eq. 5) and each coordinate j of the expected
    logit gradient (kappa (s_j - delta_yj), Theorem 11), each with the theoretical value, the
    estimate, its standard error and the z-score (estimate - theory) / SE. The SE of the
    sample variance uses the fourth central moment: sqrt((m4 - m2^2) / n).

    ``bf16``: as under ``--bf16`` training, the logits are bf16 and the mechanism is called inside a bf16 autocast
    region (it computes in float32 regardless); the gradient it returns is bf16, as the model receives it. The
    theory is then that of the bf16 logits (their softmax), which is what the mechanism sees.
    """
    z = logits_with_true_prob(s_y=s_y, d=d, y=y, generator=generator)
    if bf16:
        z = z.to(torch.bfloat16).double()  # the logits a bf16 model hands over
    s = torch.softmax(z, 0)
    zz = z.to(torch.bfloat16 if bf16 else torch.float32).repeat(draws, 1).requires_grad_(True)
    target = torch.full((draws,), y, dtype=torch.long)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = dirichlet_nll(zz, target, r=r, alpha=alpha, generator=generator, reduction="none")
    loss.sum().backward()
    L = loss.detach().double()
    G = zz.grad.double()
    n = draws
    m = L.mean()
    c = L - m
    m2, m4 = (c**2).mean(), (c**4).mean()
    var = m2 * n / (n - 1)
    if bf16:
        s_y = float(s[y])  # the bf16 logits' own probability of y
    k = float(kappa(s_y=s_y, r=r, alpha=alpha))
    base = dict(s_y=s_y, r=r, alpha=alpha, d=d, draws=draws)
    rows = [
        dict(base, stat="E[loss] (Eq. 4)", coord=-1, theory=float(expected_loss(s_y=s_y, r=r, alpha=alpha, d=d)),
             estimate=float(m), se=float(L.std() / n**0.5)),
        dict(base, stat="Var[loss] (Eq. 5)", coord=-1, theory=float(loss_variance(s_y=s_y, r=r, alpha=alpha, d=d)),
             estimate=float(var), se=float(((m4 - m2**2) / n).sqrt())),
    ]
    onehot = torch.zeros(d, dtype=torch.float64)
    onehot[y] = 1.0
    grad_theory = k * (s - onehot)
    gm, gse = G.mean(0), G.std(0) / n**0.5
    for j in range(d):
        rows.append(dict(base, stat="E[dloss/dz_j] (Thm 11)", coord=j, theory=float(grad_theory[j]),
                         estimate=float(gm[j]), se=float(gse[j])))
    for row in rows:
        row["z"] = (row["estimate"] - row["theory"]) / row["se"]
    return rows


def operating_point(*, eps: float, alpha: float, q: float, steps: int, delta: float, s_y: float, d: int,
                    lr: float) -> dict:
    """Everything Sections 3.4-3.6 say about one setting: r* (Eq. 1), the certified epsilon and
    its order, kappa (Eq. 3), E[loss] (Eq. 4), Var[loss] (Eq. 5) and gamma_eff (Eq. 6)."""
    from dirdp import accountant

    r, spend = accountant.calibrate(eps=eps, alpha=alpha, q=q, steps=steps, delta=delta)
    return dict(
        eps=eps, alpha=alpha, q=q, steps=steps, delta=delta, s_y=s_y, d=d, lr=lr,
        rstar=r, certified_eps=spend.epsilon, order=spend.order,
        kappa=float(kappa(s_y=s_y, r=r, alpha=alpha)),
        expected_loss=float(expected_loss(s_y=s_y, r=r, alpha=alpha, d=d)),
        loss_variance=float(loss_variance(s_y=s_y, r=r, alpha=alpha, d=d)),
        effective_lr=float(effective_lr(lr=lr, s_y=s_y, r=r, alpha=alpha)),
    )
