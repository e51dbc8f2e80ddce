"""The audit's statistics: Clopper-Pearson limits, the epsilon lower bound of a distinguishing test,
honest (held-out) thresholding, ROC summaries for membership inference with DeLong's interval for the difference of
two AUCs on the same records, and the largest AUC an (eps, delta)-DP model allows any membership test.

Any (eps, delta)-DP mechanism and any test T satisfy FPR + e^eps FNR >= 1 - delta and
FNR + e^eps FPR >= 1 - delta (Jagielski et al. 2020; Nasr et al. 2021), so
eps >= max(ln((1 - delta - FNR)/FPR), ln((1 - delta - FPR)/FNR)). With FPR and FNR replaced by
Clopper-Pearson upper confidence limits the bound holds with the stated confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats


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
    best_t = float(candidates[int(_lower_bounds(neg_a, pos_a, candidates, delta, confidence).argmax())])
    held_out = epsilon_lower_bound(false_positives=int((neg_b > best_t).sum()), n_negatives=len(neg_b),
                                   false_negatives=int((pos_b <= best_t).sum()), n_positives=len(pos_b), delta=delta,
                                   confidence=confidence)
    return held_out, best_t


def _lower_bounds(neg: torch.Tensor, pos: torch.Tensor, thresholds: torch.Tensor, delta: float,
                  confidence: float) -> np.ndarray:
    """:func:`epsilon_lower_bound`'s ``epsilon`` at every threshold at once ("positive" = above it), vectorised:
    the same Clopper-Pearson limits and the same formula as one call per threshold."""
    t = thresholds.double().numpy()
    fp = len(neg) - np.searchsorted(np.sort(neg.double().numpy()), t, side="right")  # negatives above t
    fn = np.searchsorted(np.sort(pos.double().numpy()), t, side="right")  # positives at or below t
    a = 1 - confidence

    def upper(k, n):
        hi = np.ones(len(k))
        inner = k < n
        hi[inner] = stats.beta.ppf(1 - a / 2, k[inner] + 1, n - k[inner])
        return hi

    fpr, fnr = upper(fp, len(neg)), upper(fn, len(pos))
    best = np.zeros(len(t))
    with np.errstate(divide="ignore"):
        for x, y in ((fpr, fnr), (fnr, fpr)):
            ok = 1 - delta - y > 0
            val = np.where(x > 0, np.log(np.where(ok, 1 - delta - y, 1.0) / np.where(x > 0, x, 1.0)), np.inf)
            best = np.maximum(best, np.where(ok, val, 0.0))
    return best


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


def random_tie_ranks(scores_in: torch.Tensor, scores_out: torch.Tensor, *,
                     generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The ranks (0-based, float64) of the members' and the non-members' scores in one ranking by (score, an
    independent uniform draw): no two records share a rank, and tied scores are ordered at random."""
    both = torch.cat([scores_in.double().flatten(), scores_out.double().flatten()])
    u = torch.rand(len(both), generator=generator, dtype=torch.float64)
    order = torch.argsort(u)  # the random key first, then a stable sort on the score: ties stay in random order
    order = order[torch.argsort(both[order], stable=True)]
    rank = torch.empty(len(both), dtype=torch.float64)
    rank[order] = torch.arange(len(both), dtype=torch.float64)
    return rank[: scores_in.numel()], rank[scores_in.numel():]


def roc_random_ties(scores_in: torch.Tensor, scores_out: torch.Tensor, *, generator: torch.Generator,
                    fprs=(0.01, 0.001)) -> dict:
    """:func:`roc_at` with ties broken at random (:func:`random_tie_ranks`), so a tie neither counts 1/2 (which pulls
    the AUC to 0.5) nor lets a threshold admit every tied record at once (which makes the TPR at a low FPR 0 by
    construction when many non-members tie at the top). Also returns ``tied_records``, the number of records whose
    score equals another record's."""
    out = roc_at(*random_tie_ranks(scores_in, scores_out, generator=generator), fprs=fprs)
    out["tied_records"] = tied_records(torch.cat([scores_in.double().flatten(), scores_out.double().flatten()]))
    return out


def _midranks(x: torch.Tensor) -> torch.Tensor:
    """1-based ranks of ``x`` within itself, tied values sharing the mean of their ranks."""
    uniq, inverse, counts = torch.unique(x, return_inverse=True, return_counts=True)
    first = torch.cumsum(counts, 0) - counts  # 0-based position of each distinct value's first copy
    return (first + (counts + 1) / 2).double()[inverse]


def delong_components(scores_in: torch.Tensor, scores_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """DeLong's structural components of the AUC (DeLong, DeLong & Clarke-Pearson 1988), by midranks (Sun & Xu
    2014): V10_i = (1/n) sum_j psi(X_i, Y_j) for each member i and V01_j = (1/m) sum_i psi(X_i, Y_j) for each
    non-member j, psi(x, y) = 1 if x > y, 1/2 if x = y, else 0. Both average to the AUC of :func:`roc_at`."""
    x, y = scores_in.double().flatten(), scores_out.double().flatten()
    m, n = len(x), len(y)
    z = _midranks(torch.cat([x, y]))
    v10 = (z[:m] - _midranks(x)) / n
    v01 = 1 - (z[m:] - _midranks(y)) / m
    return v10, v01


def paired_auc_difference(a_in: torch.Tensor, a_out: torch.Tensor, b_in: torch.Tensor, b_out: torch.Tensor, *,
                          confidence: float = 0.95) -> dict:
    """AUC(a) - AUC(b) for two scores of the **same** records (member i is a_in[i] and b_in[i]; non-member j is
    a_out[j] and b_out[j]), with DeLong's variance for correlated AUCs:

        Var = (S10_aa + S10_bb - 2 S10_ab) / m + (S01_aa + S01_bb - 2 S01_ab) / n,

    S10 (S01) the sample covariance over members (non-members) of the two scores' components
    (:func:`delong_components`), and the normal interval diff -+ z se. Returns diff, se, ci_low, ci_high."""
    a10, a01 = delong_components(a_in, a_out)
    b10, b01 = delong_components(b_in, b_out)
    if len(a10) < 2 or len(a01) < 2 or len(b10) != len(a10) or len(b01) != len(a01):
        raise ValueError(f"paired AUCs need the same records, at least 2 of each kind, for both scores. Found "
                         f"{len(a10)} and {len(b10)} members, {len(a01)} and {len(b01)} non-members.")
    d10, d01 = a10 - b10, a01 - b01
    diff = float(d10.mean())
    se = math.sqrt(float(d10.var()) / len(d10) + float(d01.var()) / len(d01))  # var of a - b: S_aa + S_bb - 2 S_ab
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    return dict(diff=diff, se=se, ci_low=diff - z * se, ci_high=diff + z * se)


def tied_records(scores: torch.Tensor) -> int:
    """How many of ``scores`` equal another score."""
    _, inverse, counts = torch.unique(scores.flatten(), return_inverse=True, return_counts=True)
    return int((counts[inverse] > 1).sum())


def dp_auc_bound(eps: float, delta: float) -> float:
    """The largest AUC any membership test can reach if the model is (eps, delta)-DP: the area under
    TPR(x) <= min(1, delta + e^eps x, 1 - e^-eps (1 - delta - x)) at FPR = x, the two inequalities of the module
    docstring solved for TPR. The lines cross at x* = (1 - delta)/(e^eps + 1), and the second reaches 1 at
    x = 1 - delta, so AUC <= delta x* + e^eps x*^2/2 + (1 - delta - x*) - e^-eps (1 - delta - x*)^2/2 + delta
    (e^eps/(1 + e^eps) at delta = 0). It holds for a target record drawn, like the rest of the data, independently
    from one distribution (Humphries et al. 2020): members and test records here.
    """
    if not (eps >= 0 and 0 <= delta < 1) or math.isnan(eps):
        raise ValueError(f"need eps >= 0 and 0 <= delta < 1. Found eps={eps}, delta={delta}.")
    if math.isinf(eps):
        return 1.0
    x = (1 - delta) / (math.exp(eps) + 1)
    rest = 1 - delta - x
    return delta * x + math.exp(eps) * x * x / 2 + rest - math.exp(-eps) * rest * rest / 2 + delta
