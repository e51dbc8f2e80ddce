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
