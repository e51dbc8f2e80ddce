"""The canary distinguishing audit (Jagielski et al. 2020; Nasr et al. 2021) on a toy trainer, and
the same audit of LATENT's local-DP release.

Many trainings of a softmax-regression model on 7x7-pooled MNIST run with and without a canary
(:func:`canary_problem`), vectorised over trials (:func:`train_linear_trials`, its own Poisson sampler
and its own DP-SGD step, tested equal to Opacus'); a held-out threshold on a test statistic turns
the two worlds' FPR and FNR into an epsilon lower bound (:func:`dirdp.audit.stats.audit_threshold`).
Each method is set to the claimed eps by its own accountant (:func:`_noise_for`, the audit's one
calibration). :func:`latent_audit` runs the same test on LATENT's release of one record.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F

from dirdp import methods
from dirdp.audit.stats import audit_threshold

AUDIT_GRID = 7  # images average-pooled 4x4 to 7x7: a linear model of 10 x 49 weights per trial
CANARY_MODEL = f"softmax regression on {AUDIT_GRID}x{AUDIT_GRID}-pooled MNIST"
# DP-SGD's clip factor is min(1, C / (||g|| + this)); Opacus adds 1e-6 (the only difference from its step)
_CLIP_STABILISER = 1e-12


class _Noise(NamedTuple):
    """A method set to a claimed epsilon: Algorithm 1's scale r (None for DP-SGD), DP-SGD's noise
    multiplier (None for Algorithm 1), and the epsilon the method's own accountant certifies."""

    r: float | None
    noise_multiplier: float | None
    certified_eps: float


def _noise_for(method: str, *, eps: float, q: float, steps: int, delta: float, alpha: float = 3.0) -> _Noise:
    """The audit's one calibration, claimed (eps, delta) at sampling rate q for T = ``steps`` steps ->
    the mechanism's parameter, by the method's own calibration in the registry (:mod:`dirdp.methods`, the
    same one training uses): Algorithm 1 at r* (Eq. 1) certified by Theorem 10, or DP-SGD at the noise
    multiplier Opacus' RDP accountant calibrates for (eps, delta). Used by :func:`canary_audit`,
    :func:`dirdp.audit.inversion.inversion_experiment` and :func:`dirdp.audit.inversion.dense_reconstruction`."""
    from dirdp.protocol import Protocol

    methods.audited(method)  # a ValueError for a method the audit does not train
    noise = methods.get(method).calibrate(eps, Protocol(alpha=alpha, q=q, steps=steps, delta=delta))
    return _Noise(r=noise.r, noise_multiplier=noise.sigma, certified_eps=noise.privacy["epsilon"])


def _pooled(x: torch.Tensor) -> torch.Tensor:
    return F.avg_pool2d(x, 4).flatten(1).double()


def _border() -> torch.Tensor:
    m = torch.zeros(AUDIT_GRID, AUDIT_GRID, dtype=torch.bool)
    m[0], m[-1], m[:, 0], m[:, -1] = True, True, True, True
    return m.flatten()


@dataclass(frozen=True)
class CanaryProblem:
    """Neighbouring data sets for the audit: D' = ``x``, ``y`` (n real records whose pooled border
    cells are all background) and D = D' plus the canary (``x_canary``, ``y_canary``): a real
    record of another image whose border carries a balanced +-beta checkerboard. ``direction`` is
    that pattern, unit norm: every record of D' is orthogonal to it, the canary is not."""

    x: torch.Tensor
    y: torch.Tensor
    x_canary: torch.Tensor
    y_canary: int
    direction: torch.Tensor


def canary_problem(split, *, n: int = 10, beta: float = 3.0, seed: int = 0) -> CanaryProblem:
    """:class:`CanaryProblem` from ``split`` (normalised MNIST-like images), 7x7 average-pooled.
    DP promises indistinguishability for *every* pair of neighbouring data sets, so the auditor may
    choose both: a small D' makes the audit cheap and takes nothing from its validity."""
    border = _border()
    pooled = _pooled(split.x)
    background = pooled[:, border].min()
    blank = torch.nonzero((pooled[:, border] == background).all(1)).flatten()
    if len(blank) < n + 1:
        raise ValueError(f"need {n + 1} records with a blank border; found {len(blank)}.")
    g = torch.Generator().manual_seed(seed)
    pick = blank[torch.randperm(len(blank), generator=g)[: n + 1]]
    pattern = torch.zeros(AUDIT_GRID * AUDIT_GRID, dtype=torch.float64)
    cells = torch.nonzero(border).flatten()
    signs = torch.tensor([1.0 if (int(c) // AUDIT_GRID + int(c) % AUDIT_GRID) % 2 else -1.0 for c in cells],
                         dtype=torch.float64)
    signs[-1] = -signs[:-1].sum() if abs(float(signs.sum())) > 0 else signs[-1]  # balanced: orthogonal to a constant
    pattern[cells] = signs
    direction = pattern / pattern.norm()
    x_c = pooled[pick[-1]] + beta * pattern
    return CanaryProblem(x=pooled[pick[:-1]], y=split.y[pick[:-1]], x_canary=x_c, y_canary=int(split.y[pick[-1]]),
                         direction=direction)


def train_linear_trials(problem: CanaryProblem, *, with_canary: bool, method: str, q: float, steps: int, trials: int,
                        lr: float = 0.1, r: float | None = None, alpha: float = 3.0, noise_multiplier: float = 0.0,
                        max_grad_norm: float = 1.0, seed: int = 0) -> dict:
    """``trials`` independent trainings of a softmax-regression model (weights and biases start at 0)
    on D (``with_canary``) or D', each with its own Poisson samples and randomness, vectorised over
    trials. ``method``: "alg1" (the Dirichlet loss of Algorithm 1 with scale ``r``, averaged over the
    batch; an empty batch makes no update) or "dpsgd" (per-example clipping at ``max_grad_norm``,
    Gaussian noise ``noise_multiplier`` x C on every step, divided by q n). float64 throughout.

    Returns the test statistics per trial: ``final`` = ||(W_T - W_0) u|| (u = the canary direction;
    what the released model shows), ``sequence`` = max_t ||(W_t - W_{t-1}) u|| (what the
    sequence of updates shows), and for DP-SGD ``likelihood``: the log-likelihood ratio of the updates' projections
    on u under "the canary is in" against "it is not" (:func:`_update_llr`), the most powerful test of an adversary
    who sees every update."""
    from dirdp.mechanism import dirichlet_nll

    kind = methods.audited(method)  # how the method steps (its spec): Dirichlet loss or clipped + noise
    if kind == methods.DIRICHLET and r is None:
        raise ValueError("Algorithm 1 needs its scale r.")
    x, y = problem.x, problem.y
    if with_canary:
        x = torch.cat([x, problem.x_canary[None]])
        y = torch.cat([y, torch.tensor([problem.y_canary])])
    n_dprime, m, d = len(problem.y), len(y), x.shape[1]
    xb = torch.cat([x, torch.ones(m, 1, dtype=x.dtype)], 1)  # bias as a constant feature
    u = torch.cat([problem.direction, torch.zeros(1, dtype=x.dtype)])
    W = torch.zeros(trials, 10, d + 1, dtype=torch.float64)
    seq = torch.zeros(trials, dtype=torch.float64)
    llr = torch.zeros(trials, dtype=torch.float64)
    xb_c = torch.cat([problem.x_canary, torch.ones(1, dtype=x.dtype)])
    g = torch.Generator().manual_seed(seed)
    # the likelihood statistic is DP-SGD's, in units of its noise: undefined without noise (left nan)
    with_llr = kind == methods.CLIPPED and noise_multiplier > 0
    if not with_llr:
        llr.fill_(float("nan"))
    for _ in range(steps):
        if with_llr:
            shift = _canary_shift(W, xb_c, problem.y_canary, u, max_grad_norm=max_grad_norm,
                                  noise_multiplier=noise_multiplier)
        pairs = torch.nonzero(torch.rand(trials, m, generator=g) < q)
        t_idx, r_idx = pairs[:, 0], pairs[:, 1]
        step = torch.zeros_like(W)
        if len(pairs):
            feats = xb[r_idx]
            logits = torch.einsum("pkd,pd->pk", W[t_idx], feats).requires_grad_(True)
            if kind == methods.DIRICHLET:
                counts = torch.bincount(t_idx, minlength=trials).to(W.dtype)
                loss = dirichlet_nll(logits, y[r_idx], r=r, alpha=alpha, generator=g, reduction="none")
                (loss / counts[t_idx]).sum().backward()
                grads = logits.grad[:, :, None] * feats[:, None, :]
            else:
                F.cross_entropy(logits, y[r_idx], reduction="sum").backward()
                grads = logits.grad[:, :, None] * feats[:, None, :]
                norms = grads.flatten(1).norm(dim=1)
                grads = grads * (max_grad_norm / (norms + _CLIP_STABILISER)).clamp(max=1.0)[:, None, None]
            step.index_add_(0, t_idx, grads.detach())
        if kind == methods.CLIPPED:
            step += noise_multiplier * max_grad_norm * torch.randn(W.shape, dtype=W.dtype, generator=g)
            step /= q * n_dprime  # a constant of the protocol, the same in both worlds
        elif not len(pairs):
            continue
        delta = -lr * step
        seq = torch.maximum(seq, (delta @ u).norm(dim=1))
        if with_llr:
            z = (delta @ u) * (-q * n_dprime / (lr * noise_multiplier * max_grad_norm))
            llr += _update_llr(z, shift, q)
        W += delta
    return dict(final=(W @ u).norm(dim=1), sequence=seq, likelihood=llr, weights=W)


def _canary_shift(W: torch.Tensor, xb_c: torch.Tensor, y_c: int, u: torch.Tensor, *, max_grad_norm: float,
                  noise_multiplier: float) -> torch.Tensor:
    """[trials, 10]: the mean of a DP-SGD update's projection on u, in units of its noise (sigma C), when the canary
    is in the batch: its clipped gradient at the current W, (p - e_y) (x_c . u) min(1, C / ||g_c||), over sigma C.
    Every record of D' contributes 0 to the projection (x . u = 0), so the auditor, who sees W, knows it exactly."""
    e = torch.softmax(W @ xb_c, dim=1)
    e[:, y_c] -= 1.0
    norms = e.norm(dim=1) * xb_c.norm()
    clip = (max_grad_norm / (norms + _CLIP_STABILISER)).clamp(max=1.0)
    return e * (clip * float(xb_c @ u) / (noise_multiplier * max_grad_norm))[:, None]


def _update_llr(z: torch.Tensor, shift: torch.Tensor, q: float) -> torch.Tensor:
    """ln [ (1 - q) N(z; 0, I) + q N(z; shift, I) ] / N(z; 0, I) per trial: one update's projection z (noise units)
    under "canary in" (sampled with probability q) against "canary out". Summed over the steps it is the
    Neyman-Pearson statistic of the two worlds for an adversary who sees every update (each step's law given the
    past is this mixture)."""
    inner = (z * shift).sum(1) - 0.5 * (shift * shift).sum(1)
    if q >= 1:
        return inner
    return torch.logaddexp(torch.full_like(inner, math.log1p(-q)), math.log(q) + inner)


def never_sampled_bound(*, q: float, steps: int, delta: float) -> float:
    """eps >= ln(1 - delta) - T ln(1 - q): the exact lower bound on any mechanism whose test statistic
    is 0 on every run without the canary and almost surely non-zero on every run that samples it.
    With S = {statistic = 0}, P_D'(S) = 1 and P_D(S) = (1 - q)^T (the canary is never in T Poisson
    batches), and (eps, delta)-DP demands P_D'(S) <= e^eps P_D(S) + delta.

    Algorithm 1 in the canary audit is such a mechanism: every record of D' is orthogonal to the
    canary direction u and no noise is added to the parameters, so theta_T u = 0 exactly on D';
    once the canary is sampled, its Dirichlet-sampled gradient gives theta_T u != 0 almost surely."""
    return math.log1p(-delta) - steps * math.log1p(-q)


def canary_audit(problem: CanaryProblem, *, method: str, q: float, steps: int, eps: float, trials: int,
                 delta: float = 1e-5, alpha: float = 3.0, lr: float = 0.1, max_grad_norm: float = 1.0,
                 seed: int = 0) -> list[dict]:
    """The distinguishing audit of one training method at claimed ``eps`` for (q, T = ``steps``):
    Algorithm 1 at r* (Eq. 1, Theorem 10) or DP-SGD at the noise multiplier Opacus calibrates for
    (eps, delta); ``trials`` trainings in each world (D' and D = D' + canary, independent seeds);
    one row per test statistic ("final": the released theta_T, white box; "sequence": every update),
    with the held-out lower bound of :func:`audit_threshold`, and for Algorithm 1 the exact bound of
    :func:`never_sampled_bound` beside the largest D' statistic seen (0 up to rounding: its check)."""
    t0 = time.perf_counter()
    noise = _noise_for(method, eps=eps, q=q, steps=steps, delta=delta, alpha=alpha)
    certified = noise.certified_eps
    dirichlet = methods.audited(method) == methods.DIRICHLET
    if dirichlet:
        kw = dict(r=noise.r, alpha=alpha)
        param = f"r*={noise.r:.4f}"
    else:
        kw = dict(noise_multiplier=noise.noise_multiplier, max_grad_norm=max_grad_norm)
        param = f"sigma={noise.noise_multiplier:.4f}, C={max_grad_norm:g}"
    common = dict(method=method, q=q, steps=steps, trials=trials, lr=lr, **kw)
    worlds = {w: train_linear_trials(problem, with_canary=w, seed=2 * seed + w, **common) for w in (0, 1)}
    wall = time.perf_counter() - t0
    rows = []
    for stat in ("final", "sequence"):
        lb, thr = audit_threshold(worlds[0][stat], worlds[1][stat], delta=delta)
        rows.append(dict(method=method, model=CANARY_MODEL, q=q, T=steps, guarantee=f"central ({eps:g}, {delta:g})-DP",
                         claimed_eps=eps, certified_eps=certified, mechanism=param, statistic=stat,
                         eps_lower_bound=lb.epsilon,
                         eps_exact_bound=never_sampled_bound(q=q, steps=steps, delta=delta) if dirichlet
                         else math.nan,
                         dprime_stat_max=float(worlds[0][stat].max()), fpr=lb.fpr, fnr=lb.fnr,
                         fpr_upper=lb.fpr_upper, fnr_upper=lb.fnr_upper, trials_per_world=trials,
                         held_out_per_world=lb.n_negatives, confidence=lb.confidence, threshold=thr,
                         n_dprime=len(problem.y), wall_time_s=round(wall, 1)))
    return rows


def latent_audit(x_a: torch.Tensor, x_b: torch.Tensor, *, eps: float, trials: int, alpha: float = 7.0,
                 mechanism: str = "uer", seed: int = 0) -> dict:
    """LATENT's own promise, audited: its release of one record is claimed eps-LDP, so for *any* two
    records a and b no test on the released bit string may tell them apart beyond eps. Release a
    (world D) and b (world D') ``trials`` times each through the LATENT layer (untrained conv module
    of :func:`dirdp.baselines.latent.conv_module`, ``mechanism``: UER by default) and test with the
    log-likelihood ratio ln Pr[out | a] / Pr[out | b], held-out threshold, delta = 0."""
    from dirdp.baselines import latent

    t0 = time.perf_counter()
    cfg = latent.LatentConfig(eps=eps, alpha=alpha, mechanism=mechanism)
    conv = latent.conv_module(x_a.shape[0], seed=seed)
    bits = latent.latent_bits(conv, torch.stack([x_a, x_b]), cfg)
    probs = latent.cfg_probabilities(cfg, bits.shape[1])
    p, q = probs.per_position()
    g = torch.Generator().manual_seed(seed)

    def llr(out):
        o = out.bool()
        pa = torch.where(bits[0].bool(), p, q)
        pb = torch.where(bits[1].bool(), p, q)
        return torch.where(o, pa.log() - pb.log(), torch.log1p(-pa) - torch.log1p(-pb)).sum(-1)

    stats_ = {w: llr(latent.randomize(bits[1 - w].expand(trials, -1), probs, generator=g)) for w in (0, 1)}
    lb, thr = audit_threshold(stats_[0], stats_[1], delta=0.0)
    return dict(method=methods.LATENT, model=f"LATENT layer (untrained conv, {mechanism.upper()}), one release", q=1.0, T=1,
                guarantee=f"local {eps:g}-DP per record", claimed_eps=eps,
                certified_eps=float(latent.pair_epsilon(bits[0], bits[1], probs)),
                mechanism=f"alpha={alpha:g}, L={bits.shape[1]}", statistic="log-likelihood ratio",
                eps_lower_bound=lb.epsilon, fpr=lb.fpr, fnr=lb.fnr, fpr_upper=lb.fpr_upper,
                fnr_upper=lb.fnr_upper, trials_per_world=trials, held_out_per_world=lb.n_negatives,
                confidence=lb.confidence, threshold=thr, n_dprime=1, wall_time_s=round(time.perf_counter() - t0, 1))
