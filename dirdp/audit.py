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
- :func:`epsilon_lower_bound`: the distinguishing audit of Jagielski et al. (2020) / Nasr et al.
  (2021). Any (eps, delta)-DP mechanism and any test T satisfy FPR + e^eps FNR >= 1 - delta and
  FNR + e^eps FPR >= 1 - delta, so eps >= max(ln((1 - delta - FNR)/FPR), ln((1 - delta - FPR)/FNR)).
  With FPR and FNR replaced by Clopper-Pearson upper confidence limits the bound holds with the
  stated confidence.
"""

from __future__ import annotations

import math
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
