"""The claim an audit row faces, for the row's own neighbouring relation.

An epsilon lower bound refutes a guarantee only if both speak of the same neighbours. The guarantees here:

- **Add/remove** (the paper's Definition 2). At q < 1, Theorem 10 (Zhu and Wang's Poisson amplification of
  Lemma 9) is the paper's claim as printed: (eps, delta) with eps = ``Claim.eps``. At q = 1 (no subsampling,
  outside Theorem 10) Algorithm 1 has **no finite add/remove claim**: the number of Dirichlet samples released
  is the number of records, so adding one is seen with certainty. DP-SGD's Gaussian mechanism keeps its own
  add/remove guarantee at q = 1 (Opacus' RDP accountant, ``Claim.certified``).
- **Replace-one.** At q = 1, Lemma 9 bounds the divergence of one record's release when its softmax input
  changes: Lemma 9 composed over T steps and converted by Lemma 13 is a replace-one claim (``Claim.eps``). At
  q < 1 the printed guarantee is add/remove; replace-one follows by group privacy (replace = remove, then add):

      (eps, delta) add/remove  =>  (2 eps, (1 + e^eps) delta) replace-one,

  since P[M(D) in S] <= e^eps P[M(D - r) in S] + delta <= e^eps (e^eps P[M(D - r + c) in S] + delta) + delta.
  This conversion is what we use (not a direct replace-one analysis): a lower bound above 2 eps refutes the
  paper's claim; one between eps and 2 eps refutes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dirdp import methods

ADJACENCY_NAMES = {"add": "add/remove", "replace": "replace one"}


@dataclass(frozen=True)
class MatchedClaim:
    """(eps, delta) claimed for neighbours of kind ``adjacency``, ``by`` what; eps = inf: no finite claim."""

    adjacency: str
    eps: float
    delta: float
    by: str

    @property
    def finite(self) -> bool:
        return math.isfinite(self.eps)


def group_privacy(eps: float, delta: float) -> tuple[float, float]:
    """(2 eps, (1 + e^eps) delta): an add/remove (eps, delta) guarantee as a replace-one guarantee."""
    return 2.0 * eps, (1.0 + math.exp(eps)) * delta


def matched_claim(method: str, adjacency: str, *, q: float, eps: float, certified: float, delta: float,
                  accountant: str = "") -> MatchedClaim:
    """The guarantee ``method`` ("alg1" or "dpsgd") makes for ``adjacency`` ("add" or "replace") at sampling rate
    ``q``: ``eps`` is Algorithm 1's epsilon at the audited (q, T) (Theorem 10 for q < 1, Lemma 9 + 13 for q = 1),
    ``certified`` the method's own accountant's (for DP-SGD: Opacus RDP, add/remove)."""
    if adjacency not in ADJACENCY_NAMES:
        raise ValueError(f"adjacency must be one of {tuple(ADJACENCY_NAMES)}. Found {adjacency!r}.")
    if not 0 < q <= 1:
        raise ValueError(f"q must lie in (0, 1]. Found q={q}.")
    kind = methods.audited(method)  # a ValueError for a method the audit does not train
    if kind == methods.DIRICHLET:
        if q >= 1:
            if adjacency == "replace":
                return MatchedClaim(adjacency, eps, delta, accountant or "Lemma 9 composed, Lemma 13 (replace one)")
            return MatchedClaim(adjacency, math.inf, delta,
                                "none: at q = 1 the number of samples released reveals membership")
        if adjacency == "add":
            return MatchedClaim(adjacency, eps, delta, "Theorem 10 (add/remove, Definition 2)")
        e2, d2 = group_privacy(eps, delta)
        return MatchedClaim(adjacency, e2, d2, "Theorem 10, replace = remove + add (group privacy)")
    if adjacency == "add":  # CLIPPED: DP-SGD
        return MatchedClaim(adjacency, certified, delta, "Opacus RDP (add/remove)")
    e2, d2 = group_privacy(certified, delta)
    return MatchedClaim(adjacency, e2, d2, "Opacus RDP, replace = remove + add (group privacy)")


def verdict(eps_lower_bound: float, claimed_eps: float, most: float) -> str:
    """What a row shows against its matched claim: "no finite claim" when the claim is infinite (nothing to refute);
    "claim violated" when the lower bound exceeds the claim; "too few trials to test the claim" when ``most`` (the
    trial-count ceiling: the bound with no error on the held-out trials) is at or below the claim, so that no
    outcome of these trials could refute it; otherwise "no violation found"."""
    if not math.isfinite(claimed_eps):
        return "no finite claim"
    if eps_lower_bound > claimed_eps:
        return "claim violated"
    return "too few trials to test the claim" if most <= claimed_eps else "no violation found"


def control_verdict(eps_lower_bound: float, own_eps: float) -> str:
    """What a control shows (DP-SGD audited by a test with power): "sound_with_power" when 0 < bound <= the
    mechanism's own eps (sound: no bound above what the mechanism is; with power: above zero; not tight: the ratio
    bound / own eps says how far), "no_power" when the bound is 0, "above_own_eps" when it exceeds the mechanism's
    own eps (the audit or the code is wrong)."""
    if eps_lower_bound <= 0:
        return "no_power"
    return "sound_with_power" if eps_lower_bound <= own_eps else "above_own_eps"
