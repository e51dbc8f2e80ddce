"""Auditing the released model: does it keep the promised epsilon? (issue: privacy audit)

Section 3.3 of the paper argues that "backpropagation uses only E_B and not D_B", so that the
parameter update is post-processing of the Dirichlet samples and the trained model inherits their
Theorem-10 guarantee. The parameter gradient of the loss is

    d(-log p~_y)/d theta = (d loss / d p~)(d p~ / d eta) r (d s / d z)(d z / d theta),

and d z / d theta is evaluated at the private input x. The update is therefore a function of the
Dirichlet sample *and* of x: not post-processing. This module measures what that means.

- :func:`reconstruct_dense_first_layer`: for a model whose first layer is dense (W1 x + b1), one
  update on one example gives Delta W1[j] = c_j x^T and Delta b1[j] = c_j for every hidden unit j
  (same scalar c_j, whatever the loss), so x = Delta W1[j] / Delta b1[j] exactly, whatever the
  Dirichlet sample was.
- :func:`invert_gradients` / :func:`inversion_experiment`: gradient inversion by optimisation
  (Geiping et al. 2020) for convolutional models, scored by PSNR and SSIM after matching the batch's
  order (:func:`match_to_truth`).
- :func:`epsilon_lower_bound`: the distinguishing audit of Jagielski et al. (2020) / Nasr et al.
  (2021). Any (eps, delta)-DP mechanism and any test T satisfy FPR + e^eps FNR >= 1 - delta and
  FNR + e^eps FPR >= 1 - delta, so eps >= max(ln((1 - delta - FNR)/FPR), ln((1 - delta - FPR)/FNR)).
  With FPR and FNR replaced by Clopper-Pearson upper confidence limits the bound holds with the
  stated confidence. :func:`canary_audit` runs it on many trainings of a linear model with and
  without a canary (Algorithm 1, DP-SGD), :func:`latent_audit` on LATENT's local-DP release.
- :func:`loss_threshold_attack`, :func:`membership_experiment`, :func:`released_model_mia`:
  black-box membership inference (Yeom et al. 2018), AUC and TPR at low FPR.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from scipy import stats
from torch import nn


def clopper_pearson(k: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion with k successes out of n."""
    if not (0 <= k <= n and n > 0):
        raise ValueError(f"need 0 <= k <= n and n > 0. Found k={k}, n={n}.")
    a = 1 - confidence
    lo = 0.0 if k == 0 else float(stats.beta.ppf(a / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - a / 2, k + 1, n - k))
    return lo, hi


@dataclass(frozen=True)
class EpsilonLowerBound:
    """An empirical epsilon lower bound from a distinguishing test, with what it came from."""

    epsilon: float  # the lower bound at the stated confidence (0 when the test distinguishes nothing)
    point: float  # the same formula at the observed rates (no confidence correction)
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    n_negatives: int
    n_positives: int
    delta: float
    confidence: float


def _eps_from_rates(fpr: float, fnr: float, delta: float) -> float:
    best = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        if a > 0 and 1 - delta - b > 0:
            best = max(best, math.log((1 - delta - b) / a))
        elif a == 0 and 1 - delta - b > 0:
            best = math.inf
    return best


def epsilon_lower_bound(*, false_positives: int, n_negatives: int, false_negatives: int, n_positives: int,
                        delta: float, confidence: float = 0.95) -> EpsilonLowerBound:
    """eps >= max(ln((1 - delta - FNR)/FPR), ln((1 - delta - FPR)/FNR)) with FPR and FNR replaced by
    their one-sided Clopper-Pearson upper limits, each at level 1 - (1 - confidence)/2 (union bound),
    so that the returned bound holds with probability >= ``confidence``.

    Negatives are trials of the world without the canary (D'), positives of the world with it (D).
    """
    # the upper end of a two-sided interval at ``confidence`` is a one-sided limit at 1 - (1 - confidence)/2
    fpr_hi = clopper_pearson(false_positives, n_negatives, confidence=confidence)[1]
    fnr_hi = clopper_pearson(false_negatives, n_positives, confidence=confidence)[1]
    fpr, fnr = false_positives / n_negatives, false_negatives / n_positives
    return EpsilonLowerBound(epsilon=_eps_from_rates(fpr_hi, fnr_hi, delta), point=_eps_from_rates(fpr, fnr, delta),
                             fpr=fpr, fnr=fnr, fpr_upper=fpr_hi, fnr_upper=fnr_hi, n_negatives=n_negatives,
                             n_positives=n_positives, delta=delta, confidence=confidence)


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


# ------------------------------------------------------------------------------ canary audit

AUDIT_GRID = 7  # images average-pooled 4x4 to 7x7: a linear model of 10 x 49 weights per trial


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
    what the released model shows), and ``sequence`` = max_t ||(W_t - W_{t-1}) u|| (what the
    sequence of updates shows)."""
    from dirdp.mechanism import dirichlet_nll

    if method not in ("alg1", "dpsgd"):
        raise ValueError(f"method must be 'alg1' or 'dpsgd'. Found {method!r}.")
    if method == "alg1" and r is None:
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
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        pairs = torch.nonzero(torch.rand(trials, m, generator=g) < q)
        t_idx, r_idx = pairs[:, 0], pairs[:, 1]
        step = torch.zeros_like(W)
        if len(pairs):
            feats = xb[r_idx]
            logits = torch.einsum("pkd,pd->pk", W[t_idx], feats).requires_grad_(True)
            if method == "alg1":
                counts = torch.bincount(t_idx, minlength=trials).to(W.dtype)
                loss = dirichlet_nll(logits, y[r_idx], r=r, alpha=alpha, generator=g, reduction="none")
                (loss / counts[t_idx]).sum().backward()
                grads = logits.grad[:, :, None] * feats[:, None, :]
            else:
                F.cross_entropy(logits, y[r_idx], reduction="sum").backward()
                grads = logits.grad[:, :, None] * feats[:, None, :]
                norms = grads.flatten(1).norm(dim=1)
                grads = grads * (max_grad_norm / (norms + 1e-12)).clamp(max=1.0)[:, None, None]
            step.index_add_(0, t_idx, grads.detach())
        if method == "dpsgd":
            step += noise_multiplier * max_grad_norm * torch.randn(W.shape, dtype=W.dtype, generator=g)
            step /= q * n_dprime  # a constant of the protocol, the same in both worlds
        elif not len(pairs):
            continue
        delta = -lr * step
        seq = torch.maximum(seq, (delta @ u).norm(dim=1))
        W += delta
    return dict(final=(W @ u).norm(dim=1), sequence=seq, weights=W)


def audit_threshold(stat_negative: torch.Tensor, stat_positive: torch.Tensor, *, delta: float,
                    confidence: float = 0.95) -> tuple[EpsilonLowerBound, float]:
    """Honest thresholding: the first half of each world's trials chooses the threshold (the one
    with the largest lower bound there), the second half measures FPR and FNR at it. "Positive" =
    statistic above the threshold = the canary was in. Returns the bound on the held-out half and
    the threshold."""
    neg_a, neg_b = stat_negative[: len(stat_negative) // 2], stat_negative[len(stat_negative) // 2:]
    pos_a, pos_b = stat_positive[: len(stat_positive) // 2], stat_positive[len(stat_positive) // 2:]
    values = torch.unique(torch.cat([neg_a, pos_a]))  # sorted
    # thresholds halfway between consecutive observed values (and beyond both ends)
    candidates = torch.cat([values[:1] - 1, (values[1:] + values[:-1]) / 2, values[-1:] + 1])
    best, best_t = -1.0, float(candidates[-1])
    for t in candidates.tolist():
        lb = epsilon_lower_bound(false_positives=int((neg_a > t).sum()), n_negatives=len(neg_a),
                                 false_negatives=int((pos_a <= t).sum()), n_positives=len(pos_a), delta=delta,
                                 confidence=confidence).epsilon
        if lb > best:
            best, best_t = lb, t
    held_out = epsilon_lower_bound(false_positives=int((neg_b > best_t).sum()), n_negatives=len(neg_b),
                                   false_negatives=int((pos_b <= best_t).sum()), n_positives=len(pos_b), delta=delta,
                                   confidence=confidence)
    return held_out, best_t


# ------------------------------------------------------------------------ membership inference

def roc_at(scores_in: torch.Tensor, scores_out: torch.Tensor, *, fprs=(0.01, 0.001)) -> dict:
    """AUC (the Mann-Whitney statistic, ties counted 1/2) and the TPR at each FPR, for "member" =
    score above a threshold set on the non-members' scores."""
    s_in, s_out = scores_in.double().flatten(), scores_out.double().flatten()
    ranks = torch.cat([s_in, s_out]).argsort().argsort().double() + 1
    both = torch.cat([s_in, s_out])
    # average ranks over ties
    uniq, inverse = torch.unique(both, return_inverse=True)
    mean_rank = torch.zeros(len(uniq), dtype=torch.float64).index_add_(0, inverse, ranks)
    mean_rank /= torch.bincount(inverse, minlength=len(uniq)).double()
    r_in = mean_rank[inverse[: len(s_in)]].sum()
    auc = float((r_in - len(s_in) * (len(s_in) + 1) / 2) / (len(s_in) * len(s_out)))
    out = dict(auc=auc, n_members=len(s_in), n_non_members=len(s_out))
    for f in fprs:
        k = int(math.floor(f * len(s_out)))  # at most k non-members above the threshold
        thr = s_out.sort(descending=True).values[k] if k < len(s_out) else -math.inf
        out[f"tpr_at_fpr_{f:g}"] = float((s_in > thr).double().mean())
    return out


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


# --------------------------------------------------------------------------- gradient inversion

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


def _parameter_update(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, method: str, r: float | None = None,
                      alpha: float = 3.0, noise_multiplier: float = 0.0, max_grad_norm: float = 1.0,
                      expected_batch: float | None = None, generator: torch.Generator) -> list[torch.Tensor]:
    """The gradient one step applies (the update divided by -lr) on the batch (x, y): Algorithm 1's
    batch-mean Dirichlet loss, or DP-SGD's per-example clipped gradients summed, plus
    N(0, sigma^2 C^2) noise, divided by the expected batch size q n (``expected_batch``)."""
    from dirdp.mechanism import dirichlet_nll

    params = [p for p in model.parameters() if p.requires_grad]
    if method == "alg1":
        loss = dirichlet_nll(model(x), y, r=r, alpha=alpha, generator=generator)
        return [gr.detach() for gr in torch.autograd.grad(loss, params)]
    if method != "dpsgd":
        raise ValueError(f"method must be 'alg1' or 'dpsgd'. Found {method!r}.")
    total = [torch.zeros_like(p) for p in params]
    for i in range(len(x)):  # per-example gradients (batches here are small)
        gi = torch.autograd.grad(F.cross_entropy(model(x[i:i + 1]), y[i:i + 1]), params)
        scale = min(1.0, max_grad_norm / float(torch.sqrt(sum((t ** 2).sum() for t in gi)) + 1e-12))
        total = [a + scale * b for a, b in zip(total, gi)]
    return [(a + noise_multiplier * max_grad_norm * torch.randn(a.shape, generator=generator)) / expected_batch
            for a in total]


def match_to_truth(found: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """A batch's update is the same for every order of its examples, so an inversion finds the batch
    in some order: reorder ``found`` by the assignment that maximises the total SSIM with ``truth``
    (Hungarian method), as gradient-inversion evaluations do, before scoring image by image."""
    from scipy.optimize import linear_sum_assignment

    b = len(truth)
    if b == 1:
        return found
    pairs = ssim(found.repeat_interleave(b, 0), truth.repeat(b, 1, 1, 1)).view(b, b)  # [found i, truth j]
    rows, cols = linear_sum_assignment(pairs.numpy(), maximize=True)
    order = torch.empty(b, dtype=torch.long)
    order[torch.as_tensor(cols)] = torch.as_tensor(rows)
    return found[order]


def inversion_experiment(model_fn, images: torch.Tensor, labels: torch.Tensor, *, method: str, batch_sizes=(1, 8, 32),
                         eps: float = 1.0, q: float = 0.005, steps_T: int = 20000, delta: float = 1e-5,
                         alpha: float = 3.0, attack_steps: int = 1000, n_train: int = 60000, seed: int = 0
                         ) -> tuple[list[dict], dict[int, tuple[torch.Tensor, torch.Tensor]]]:
    """Gradient inversion of one training step of ``method`` at claimed ``eps`` (with q, T of the
    protocol: Algorithm 1 at its r*, DP-SGD at its calibrated noise multiplier, both for eps), on a
    freshly initialised ``model_fn()`` (the first step of training), for each batch size. Returns one
    row per batch size (PSNR and SSIM per image after :func:`match_to_truth`, mean and median) and
    {batch size: (truth, found)}."""
    from dirdp import accountant
    from dirdp.baselines import dpsgd

    kw: dict = dict(method=method, alpha=alpha)
    if method == "alg1":
        kw["r"] = accountant.rstar(eps=eps, alpha=alpha, q=q, steps=steps_T, delta=delta)
        param = dict(rstar=kw["r"], noise_multiplier=None)
    else:
        cal = dpsgd.calibrate(eps=eps, delta=delta, q=q, steps=steps_T)
        kw.update(noise_multiplier=cal.noise_multiplier, expected_batch=q * n_train)
        param = dict(rstar=None, noise_multiplier=cal.noise_multiplier)
    lo, hi = float(images.min()), float(images.max())
    rows, pictures, start = [], {}, 0
    for b in batch_sizes:
        x, y = images[start:start + b], labels[start:start + b]
        start += b
        torch.manual_seed(seed)
        model = model_fn()
        if method == "dpsgd":
            model = dpsgd.make_compatible(model)
        model.train()
        gen = torch.Generator().manual_seed(seed + b)
        t0 = time.perf_counter()
        observed = _parameter_update(model, x, y, generator=gen, **kw)
        known = logit_grad_from_update(observed) if b == 1 and method == "alg1" else None
        found = match_to_truth(invert_gradients(model, observed, tuple(x.shape), logit_grad=known,
                                                steps=attack_steps, bounds=(lo, hi), seed=seed), x)
        p, s = psnr(found, x), ssim(found, x)
        rows.append(dict(method=method, batch_size=b, claimed_eps=eps, q=q, T=steps_T, **param,
                         psnr_mean=float(p.mean()), psnr_median=float(p.median()), ssim_mean=float(s.mean()),
                         ssim_median=float(s.median()), attack_steps=attack_steps,
                         logit_gradient="read from the update" if known is not None else "optimised",
                         wall_time_s=round(time.perf_counter() - t0, 1)))
        pictures[b] = (x, found)
    return rows, pictures



# ---------------------------------------------------------------------------- audit experiments

CANARY_MODEL = f"softmax regression on {AUDIT_GRID}x{AUDIT_GRID}-pooled MNIST"


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
    from dirdp import accountant
    from dirdp.baselines import dpsgd

    t0 = time.perf_counter()
    if method == "alg1":
        r = accountant.rstar(eps=eps, alpha=alpha, q=q, steps=steps, delta=delta)
        kw = dict(r=r, alpha=alpha)
        certified, param = accountant.epsilon(r=r, alpha=alpha, q=q, steps=steps, delta=delta).epsilon, f"r*={r:.4f}"
    elif method == "dpsgd":
        cal = dpsgd.calibrate(eps=eps, delta=delta, q=q, steps=steps)
        kw = dict(noise_multiplier=cal.noise_multiplier, max_grad_norm=max_grad_norm)
        certified, param = cal.epsilon_rdp, f"sigma={cal.noise_multiplier:.4f}, C={max_grad_norm:g}"
    else:
        raise ValueError(f"method must be 'alg1' or 'dpsgd'. Found {method!r}.")
    common = dict(method=method, q=q, steps=steps, trials=trials, lr=lr, **kw)
    worlds = {w: train_linear_trials(problem, with_canary=w, seed=2 * seed + w, **common) for w in (0, 1)}
    wall = time.perf_counter() - t0
    rows = []
    for stat in ("final", "sequence"):
        lb, thr = audit_threshold(worlds[0][stat], worlds[1][stat], delta=delta)
        rows.append(dict(method=method, model=CANARY_MODEL, q=q, T=steps, guarantee=f"central ({eps:g}, {delta:g})-DP",
                         claimed_eps=eps, certified_eps=certified, mechanism=param, statistic=stat,
                         eps_lower_bound=lb.epsilon,
                         eps_exact_bound=never_sampled_bound(q=q, steps=steps, delta=delta) if method == "alg1"
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
    return dict(method="latent", model=f"LATENT layer (untrained conv, {mechanism.upper()}), one release", q=1.0, T=1,
                guarantee=f"local {eps:g}-DP per record", claimed_eps=eps,
                certified_eps=float(latent.pair_epsilon(bits[0], bits[1], probs)),
                mechanism=f"alpha={alpha:g}, L={bits.shape[1]}", statistic="log-likelihood ratio",
                eps_lower_bound=lb.epsilon, fpr=lb.fpr, fnr=lb.fnr, fpr_upper=lb.fpr_upper,
                fnr_upper=lb.fnr_upper, trials_per_world=trials, held_out_per_world=lb.n_negatives,
                confidence=lb.confidence, threshold=thr, n_dprime=1, wall_time_s=round(time.perf_counter() - t0, 1))


def membership_experiment(members, non_members, *, method: str, eps: float, q: float, steps: int, out_dir,
                          dataset: str = "mnist", model: str = "papernot_cnn", seed: int = 0) -> dict:
    """Black-box membership inference at matched claimed epsilon: train ``model`` on ``members`` only
    (Algorithm 1 at r*, DP-SGD calibrated by Opacus, or non-private cross-entropy at eps = inf; the
    same q, T, lr, sampling) with :func:`dirdp.training.train`, then attack the released model with
    :func:`loss_threshold_attack` on the members against as many ``non_members``."""
    from pathlib import Path

    from dirdp import training

    cfg = training.make_config(dataset, eps, seed, method=method, model=model, q=q, steps=steps,
                               eval_every=steps, checkpoint_every=steps + 1)
    out = Path(out_dir) / f"{method}_eps{eps:g}_seed{seed}.json"
    res = training.train(cfg, out, data={"train": members, "test": non_members}, progress=False)
    net, _ = training.load_trained(out)
    attack = loss_threshold_attack(net, members, non_members)
    return dict(method=method if math.isfinite(eps) else "non-private", model=model, data=f"{dataset}: {len(members)} members, {len(non_members)} non-members",
                q=q, T=steps, claimed_eps=eps, certified_eps=res["epsilon"],
                test_accuracy=res["test_accuracy"], **attack, wall_time_s=res["wall_time_s"])


def released_model_mia(result_path, *, n: int = 2000, seed: int = 0, data_root=None) -> dict:
    """:func:`loss_threshold_attack` on a model the DAG released (a run's JSON): ``n`` of its training
    records against ``n`` test records, both drawn at random."""
    import json

    from dirdp import training
    from dirdp.data import Split

    net, data = training.load_trained(result_path, data_root=data_root)
    g = torch.Generator().manual_seed(seed)

    def pick(split):
        idx = torch.randperm(len(split), generator=g)[:n]
        return Split(split.x[idx], split.y[idx])

    res = json.loads(open(result_path).read())
    eps = float(res["eps_target"])  # the JSON stores inf as "inf"
    method = res.get("method", "alg1") if math.isfinite(eps) else "non-private"
    return dict(method=method, model=f"{res['model']} ({res['width_label']})",
                data=f"{res['dataset']}: {n} training vs {n} test records", q=res["q"], T=res["steps"],
                claimed_eps=eps, certified_eps=float(res["epsilon"]), test_accuracy=res["test_accuracy"],
                **loss_threshold_attack(net, pick(data["train"]), pick(data["test"])))
