"""The one-run audit's rows (notebooks/audit_one_run.ipynb): each run with canaries, each score, each k of the grid.

A run of the profile's ``audit_one_run: runs`` trained on the MNIST training set plus the canaries drawn to be in it
(:mod:`dirdp.canaries`), and its result JSON carries every canary's white-box and black-box score
(``one_run``). Here each score becomes guesses (the k/2 highest: "in", the k/2 lowest: "out") and the guesses an
epsilon lower bound by Steinke, Nasr and Jagielski's theorem at the run's delta (:func:`dirdp.audit.one_run.audit`,
Bonferroni over the grid of k fixed in the profile), against the claim the run makes for add/remove neighbours (the
adjacency of the one-run scheme: a canary is in the training set or not): the epsilon its own accountant certified
(Theorem 10 for Algorithm 1, Opacus' RDP for DP-SGD), beside DP-SGD's tighter PRV epsilon (its own eps). Beside
each bound, Mahloujifar, Melis and Chaudhuri's f-DP analysis of the same guesses (:func:`dirdp.audit.one_run.
gdp_mu_lower_bound`, at the same confidence): the largest mu of a Gaussian trade-off curve the guesses reject, and the
eps at the run's delta of that curve, a lower bound on the run's eps only if its trade-off curve is Gaussian.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from dirdp.audit.one_run import audit, epsilon_lower_bound, gdp_epsilon, gdp_mu_lower_bound
from dirdp.run_result import model_label, read_run

SCORE_KINDS = ("white_box", "black_box")
ADVERSARY = {"white_box": "final model, white box (theta_0 and theta_T)",
             "black_box": "final model, black box (its logits on the canaries)"}
# a row's verdict: a typed field (labels are the renderer's)
VIOLATED, NOT_VIOLATED, TOO_FEW = "claim_violated", "no_violation_found", "too_few_canaries"


def auc(scores: np.ndarray, included: np.ndarray) -> float:
    """The area under the ROC curve of ``scores`` for telling the included canaries from the others (ties: 1/2)."""
    from scipy.stats import rankdata

    ranks = rankdata(scores)
    n1, n0 = int(included.sum()), int((~included).sum())
    return float((ranks[included].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def rows(path: str | Path, *, ks, confidence: float) -> list[dict]:
    """One row per score kind and k of ``ks`` for the run at ``path`` (its ``best`` column marks each kind's largest
    bound, which holds at ``confidence`` for the whole grid)."""
    rec = json.loads(Path(path).read_text())
    one = rec.get("one_run")
    if one is None:
        raise ValueError(f"{path} has no one_run record: it was not trained with --canaries.")
    run = read_run(path)
    included = np.asarray(one["included"], dtype=bool)
    m, delta = len(included), float(rec["delta"])
    claim = float(rec["epsilon"])
    own = rec.get("epsilon_prv") or claim  # DP-SGD's PRV epsilon; Algorithm 1's own is its claim
    out = []
    for kind in SCORE_KINDS:
        scores = np.asarray(one["scores"][kind], dtype=float)
        result = audit(scores, included, delta=delta, ks=ks, confidence=confidence)
        area = auc(scores, included)
        for row in result.rows:
            ceiling = epsilon_lower_bound(m, row.r, row.r, delta, confidence=row.confidence)
            verdict = (VIOLATED if row.eps_lower_bound > claim
                       else TOO_FEW if ceiling <= claim else NOT_VIOLATED)
            mu = gdp_mu_lower_bound(m, row.r, row.v, confidence=row.confidence)
            out.append(dict(
                run=str(path), dataset=run["dataset"], method=run["method"], model=rec["model"],
                model_label=model_label(run), width=run["width"], precision=run["precision"], q=run["q"],
                T=run["steps"], rstar=run["rstar"], noise_multiplier=rec.get("noise_multiplier"),
                test_accuracy=run["test"], adjacency="add", claimed_eps=claim, claim_by=rec.get("accountant"),
                own_eps=float(own), delta=delta, canaries=m, canaries_included=int(included.sum()),
                canary_source=one["source"], score=kind, adversary=ADVERSARY[kind], score_auc=area,
                k=row.k_pos + row.k_neg, k_in=row.k_pos, k_out=row.k_neg, guesses=row.r, correct=row.v,
                accuracy=row.accuracy, eps_lower_bound=row.eps_lower_bound, gdp_mu_lower_bound=mu,
                gdp_eps_if_gaussian=gdp_epsilon(mu, delta), confidence_per_k=row.confidence,
                confidence=confidence, grid=len(ks), most_these_guesses_can_show=ceiling,
                best=row is result.best, verdict=verdict, theta0_as_trained=one.get("theta0_as_trained"),
                train_wall_s=rec["wall_time_s"], score_wall_s=one.get("wall_time_s"),
                git_commit=run["git_commit"]))
    return out
