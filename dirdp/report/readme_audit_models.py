"""The README's generated blocks for the audit on the paper's own models (see :mod:`dirdp.report.readme`): the subspace
canary test, the BatchNorm channel, membership on the released models that learned, and Table 7's "—" cells beyond
the order cap; from ``results/<profile>/audit_subspace.csv``, ``audit_batchnorm.csv``, ``audit_released_models.csv``
and ``table7_high_orders.csv``."""

from __future__ import annotations

import math

from dirdp.audit.subspace import verdict
from dirdp.protocol import fmt_eps

NAMES = {"cifar10": "CIFAR10", "dermamnist": "DermaMNIST"}


def _model(label: str) -> str:
    name = label.split(" (")[0]
    return {"papernot_cnn w=1": "tanh CNN", "inception w=0.25": "Inception 0.25x", "inception w=1": "Inception"}.get(
        name, name)


def subspace(src) -> str:
    t = src.csv("audit_subspace")
    a = t[t.method == "alg1"]
    d = t[t.method == "dpsgd"]
    r0 = t.iloc[0]
    out = [f"- **Subspace canary test on the paper's model families** (white box: the adversary sees every update; "
           f"D = {r0.n_records:.0f} MNIST training images, the canary a test image; BatchNorm replaced by GroupNorm; "
           f"`results/{src.profile}/audit_subspace.csv`, `figures/{src.profile}/audit_subspace_residuals.png`; "
           "notebook `audit_subspace`). Algorithm 1 at the paper's r* for eps = 1 (MNIST protocol), DP-SGD at the "
           "same claimed eps as the control; the statistic is the largest residual of an update outside the span "
           "of D's logit Jacobians:", "",
           "  | setting | model | method | adjacency | claimed eps | trials per world | eps lower bound (95%) | "
           "most the trials can show | residual, world 0 (max) | residual, world 1 (median) | time |",
           "  |---|---|---|---|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        lb = f"**{r.eps_lower_bound:.2f}**" if r.eps_lower_bound > r.claimed_eps else f"{r.eps_lower_bound:.2f}"
        out.append(f"  | {r.setting} | {_model(r.model)} | {'Algorithm 1' if r.method == 'alg1' else 'DP-SGD'} | "
                   f"{'add/remove' if r.adjacency == 'add' else 'replace one'} | {r.claimed_eps:.2f} | "
                   f"{r.trials_per_world:,.0f} | {lb} | {min(r.ceiling, r.exact_bound):.2f} | {r.res0_max:.1e} | "
                   f"{r.res1_median:.1e} | {r.wall_time_s / 60:.0f} min |")
    violated = a[a.eps_lower_bound > a.claimed_eps]
    out += ["", f"  Algorithm 1's updates without the canary never leave the span: residual at most {a.res0_max.max():.1e} "
            f"(float64 round-off), against {a[a.q >= 1].res1_min.min():.1e} at least with it at q = 1. "
            f"{len(violated)} of the {len(a)} Algorithm-1 rows certify more than their claim"
            + (f" (bold); DP-SGD's largest bound is {d.eps_lower_bound.max():.2f}, at or below its claim"
               f" {d.claimed_eps.min():.2f}." if len(d) else ".")
            + " At the paper's q the canary is sampled at all only with probability 1 - (1 - q)^T, which caps any test "
            "that needs it (`exact_bound`): the column 'most the trials can show' is the smaller of that and the "
            "trial-count ceiling."]
    weak = t[[verdict(r.eps_lower_bound, r.claimed_eps, min(r.ceiling, r.exact_bound)).startswith("too few")
              for r in t.itertuples()]]
    if len(weak):
        out[-1] += (f" {len(weak)} row{'s' if len(weak) > 1 else ''} cannot test {'their' if len(weak) > 1 else 'its'} "
                    "claim at this size, since even a perfect separation would certify no more than the claim ("
                    + "; ".join(f"{r.setting}, {_model(r.model)}: at most {min(r.ceiling, r.exact_bound):.2f} for a "
                                f"claim of {r.claimed_eps:.2f}" for r in weak.itertuples())
                    + "): a bound of 0 there means too few trials, not a claim that holds.")
    return "\n".join(out)


def batchnorm(src) -> str:
    t = src.csv("audit_batchnorm")
    infl = t[t.measure.str.startswith("influence")].set_index("model")
    stats = t[t.measure.str.startswith("running statistics")]
    mia = t[t.measure.str.startswith("last-batch")].iloc[0]
    acc = t[t.measure == "test accuracy"]
    trained, init = infl.loc["released, trained (BatchNorm)"], infl.loc["initialisation (BatchNorm)"]
    gn = infl.loc["initialisation (GroupNorm, control)"]
    order = trained.reference_is.split("(")[1].split(")")[0]
    text = (f"- **The BatchNorm channel** (`results/{src.profile}/audit_batchnorm.csv`, "
            f"`figures/{src.profile}/audit_bn_influence.png`; notebook `audit_batchnorm`, on the released MNIST "
            f"eps = 1 model). Replacing one record of a Poisson batch (median {trained.batch_median:.0f} records, "
            f"{trained.trials:.0f} batches) moves the other records' logits by up to {trained.max_logit_change:.3g} "
            f"(released model; {init.max_logit_change:.3g} at initialisation; {gn.max_logit_change:.1g} with GroupNorm), "
            "so every release of a batch depends on every record of it and Theorem 10's per-record premise fails. "
            f"In Rényi divergence of order {order} the other records' joint release moves by at most "
            f"{trained.value:.2g} per step (median {trained.others_rdp_median:.2g}), against Lemma 9's "
            f"{trained.reference:.3g} for the one record the accountant charges: at r* << alpha the samples barely "
            "follow the logits, so through the released samples this channel is small. The running statistics are "
            "another matter: no noise touches them. ")
    for r in stats.itertuples():
        text += (f"White box, one step at q = 1 ({'add/remove' if r.adjacency == 'add' else 'replace one'}, "
                 f"{r.trials:.0f} trials per world): eps lower bound {r.value:.2f} against the claimed {r.reference:.2f}, "
                 f"the most the trials can show being {r.ceiling:.2f}. ")
    text += (f"On the released model, the first layer's running mean tells the last batch's records from test records "
             f"with AUC {mia.value:.3f} (TPR {mia.tpr_at_fpr_0_01:.1%} at 1% FPR, {mia.members:,.0f} records over "
             f"{mia.trials:.0f} continuations of {mia.steps:.0f} steps): the first layer's channel means are "
             "one number per image (its mean brightness times the kernel's sum, plus a constant: exactly so for images that "
             "share their border, as MNIST's do; `tests/test_audit_batchnorm.py`), so this test finds little. ")
    if len(acc) == 2:
        bn, g = acc.iloc[0], acc.iloc[1]
        text += (f"GroupNorm instead (`--norm group`, same data, eps, seed and width): test accuracy {g.value:.2f} "
                 f"against {bn.value:.2f} with BatchNorm, {g.value - bn.value:+.2f} points (n = 1 each)")
        text += _against_batchnorm_seeds(src, bn.run, g.value)
    else:
        text += "The GroupNorm run (`--norm group`) has not finished yet: its accuracy cost is not measured."
    return text


def _against_batchnorm_seeds(src, bn_run: str, groupnorm_test: float) -> str:
    """The end of the GroupNorm sentence: where the one GroupNorm run lands against every seed of its BatchNorm
    twin's setting (same data, method, eps and width), when two seeds or more ran; else a full stop."""
    import pandas as pd

    from dirdp.report.readme_campaign import acc, single_against_seeds

    t = _run_named(src, bn_run, "audit_batchnorm")
    seeds = [r["test"] for r in src.runs_of("alg1", dataset=t["dataset"], eps=t["eps"], width=t["width"], q=t["q"],
                                            steps=t["steps"])]
    if len(seeds) < 2:
        return "."
    far, where = single_against_seeds(groupnorm_test, seeds)
    s = pd.Series(seeds)
    return (f"; BatchNorm over its {len(seeds)} seeds gives {acc(s.mean(), s.std(), len(seeds))}, "
            f"and the GroupNorm run lies {where} their range, {far} their seed std from their mean; GroupNorm's own "
            "seed spread is unmeasured (n = 1), so nothing is tested.")


def _run_named(src, path: str, table: str) -> dict:
    """The run of ``src``'s runs folder that a row of ``results/<profile>/<table>.csv`` names by its JSON's path."""
    from pathlib import Path

    from dirdp.report.readme_campaign import ReadmeError

    found = [r for r in src.runs if Path(r["path"]).parts[-2:] == Path(path).parts[-2:]]
    if len(found) != 1:
        raise ReadmeError(f"{path}: the run named by results/{src.profile}/{table}.csv is not among {src.runs_dir}'s "
                          f"runs (found {len(found)}): rerun the notebook {table} for this profile, or restore that "
                          "run's JSON.")
    return found[0]


def membership_learned(src) -> str:
    rel = src.csv("audit_released_models")
    mnist = rel[rel.data.str.startswith("mnist")].copy()
    mnist["seed"] = [_run_named(src, run, "audit_released_models")["seed"] for run in mnist.run]
    mnist = mnist.sort_values(["claimed_eps", "method", "model", "seed"], kind="stable")
    rows = ["  | model | method | claimed eps | seed | test accuracy | AUC | TPR at 1% FPR | TPR at 0.1% FPR |",
            "  |---|---|---|---|---|---|---|---|"]
    names = {"alg1": "Algorithm 1", "tempered": "DP-SGD (tempered sigmoid)", "dpsgd": "DP-SGD",
             "non-private": "non-private"}
    for _, r in mnist.iterrows():
        rows.append(f"  | {r.model} | {names.get(r.method, r.method)} | {fmt_eps(r.claimed_eps)} | {r.seed} | "
                    f"{r.test_accuracy:.2f} | {r.auc:.3f} | {r['tpr_at_fpr_0.01']:.2%} | {r['tpr_at_fpr_0.001']:.2%} |")
    n = mnist.iloc[0]
    epochs = n["T"] * n.q
    return (f"- **Membership inference on models that learned** (the released MNIST models, {n.n_members:,.0f} of "
            f"each run's training records against {n.n_non_members:,.0f} test records; loss threshold; "
            f"`results/{src.profile}/audit_released_models.csv`):\n\n" + "\n".join(rows) + "\n\n"
            f"  Every model here generalises (trained for {epochs:.0f} epochs of Poisson batches), and a loss threshold finds "
            "little in any of them, the non-private ones included: this black-box attack is weak on such models, "
            "which is not evidence of privacy. A LiRA-style attack (Carlini et al. 2022) needs tens of shadow models "
            "of each target; one 0.25x Inception at the paper's protocol costs about "
            + _minutes(src) + " on one core, so it does not fit this machine and was not run.")


def _minutes(src) -> str:
    runs = [r["wall_time_s"] for r in src.runs_of("alg1", dataset="mnist") if math.isfinite(r["eps"])]
    return f"{min(runs) / 60:.0f}-{max(runs) / 60:.0f} min" if runs else "two hours"


def table7_high_orders(src) -> str:
    t = src.csv("table7_high_orders")
    cells = "; ".join(
        f"{NAMES.get(r.dataset, r.dataset)} at eps = {fmt_eps(r.eps)}: the floor {r.floor:.3f} holds for every order "
        f"cap up to {r.floor_holds_to_order:,}, orders from {r.first_order_certifying:,} on certify the cell, at order "
        f"{r.order:,} r = 3e-5 certifies eps = {r.eps_at_r_3e5:.3f}, and the largest r certifying eps = {fmt_eps(r.eps)} "
        f"there is {r.r_max_at_order:.2g}, where kappa (s_y = 0.9) = {r.kappa_at_r_max:.1e}, {r.kappa_at_rstar_eps1 / r.kappa_at_r_max:,.0f} "
        f"times less than at the eps = 1 r* ({r.kappa_at_rstar_eps1:.4f})" for r in t.itertuples())
    return (f"- **The \"—\" cells beyond the order cap** (`results/{src.profile}/table7_high_orders.csv`; "
            "`accountant.epsilon_at_order`: Theorem 10 at one order, no cap). \"Infeasible\" holds for a cap on the "
            f"RDP orders; Theorem 10 caps none. {cells}. Algorithm 1's expected gradient is kappa times the "
            "non-private one, so these cells are certifiable only by a mechanism whose training does not move.")
