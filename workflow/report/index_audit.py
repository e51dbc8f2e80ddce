"""The rows of results/<profile>/README.md for the audit on the paper's own models (the subspace canary test, the
BatchNorm channel) and for Table 7's "—" cells beyond the order cap: each from its file, nothing typed by hand."""

from __future__ import annotations

from pathlib import Path

from dirdp import provenance


def audit_rows(results: Path, figures: str) -> list[str]:
    """The index rows of the audit on the paper's own models (subspace test, BatchNorm channel, the exact final-model
    test and the DP-SGD control) and of Table 7's
    "—" cells beyond the order cap, each from its file."""
    rows = []
    path = results / "audit_subspace.csv"
    if path.exists():
        t, _ = provenance.read_csv(path)
        found = "; ".join(f"{r.method} {r.adjacency}, {r.setting}, {r.model.split(' (')[0]}: {r.eps_lower_bound:.2f} at "
                          f"claimed {r.claimed_eps:.2f} (ceiling {r.ceiling:.2f}, {r.trials_per_world} trials/world)"
                          for r in t.itertuples())
        rows.append(f"| Subspace canary test, white box (not in the paper) | [`audit_subspace.csv`](audit_subspace.csv), "
                    f"[`audit_subspace_residuals.png`]({figures}/audit_subspace_residuals.png) | 95% eps lower bound: "
                    f"{found} |")
    path = results / "audit_batchnorm.csv"
    if path.exists():
        t, _ = provenance.read_csv(path)
        parts = []
        for r in t.itertuples():
            if r.measure.startswith("influence"):
                parts.append(f"{r.model}: others' release up to {r.value:.3g} (Renyi, per step) vs Lemma 9's "
                             f"{r.reference:.3g} for one record, logits moved up to {r.max_logit_change:.3g}")
            elif r.measure.startswith("running statistics"):
                parts.append(f"running statistics ({r.adjacency}): eps lower bound {r.value:.2f} at claimed "
                             f"{r.reference:.2f} (ceiling {r.ceiling:.2f})")
            elif r.measure.startswith("last-batch"):
                parts.append(f"last-batch membership from the first running mean: AUC {r.value:.3f} "
                             f"({r.members:.0f} records)")
            else:
                parts.append(f"{r.model}: test accuracy {r.value:.2f} (n = 1)")
        rows.append(f"| BatchNorm channel (not in the paper) | [`audit_batchnorm.csv`](audit_batchnorm.csv), "
                    f"[`audit_bn_influence.png`]({figures}/audit_bn_influence.png) | " + "; ".join(parts) + " |")
    path = results / "audit_first_layer.csv"
    if path.exists():
        t, _ = provenance.read_csv(path)
        biased = t["conv_bias"].astype(str).str.lower().eq("true") if "conv_bias" in t else False
        own = t[(t.statistic == "either") | (biased & (t.statistic == "first_conv"))]  # each setting's own test
        found = "; ".join(f"{r.model} {r.precision} {r.adjacency}: {r.eps_lower_bound:.2f} at claimed "
                          f"{r.matched_claim_eps:.2f} (ceiling {r.ceiling:.2f}, {r.trials_per_world} trials/world, "
                          f"{r.false_positives} + {r.false_negatives} errors), exact bound {r.exact_bound}"
                          for r in own.itertuples())
        rows.append(f"| Exact final-model test on the paper's Inception (not in the paper) | "
                    f"[`audit_first_layer.csv`](audit_first_layer.csv), "
                    f"[`audit_paper_model.png`]({figures}/audit_paper_model.png) | 95% eps lower bound: {found} |")
    path = results / "audit_control.csv"
    if path.exists():
        t, _ = provenance.read_csv(path)
        found = "; ".join(f"q = {r.q:.3g}, T = {r.T:,}: {r.eps_lower_bound:.2f} <= DP-SGD's own {r.mechanism_eps:.2f} "
                          f"<= claimed {r.claimed_eps:.2f} ({r.trials_per_world} trials/world)" for r in t.itertuples())
        rows.append(f"| Control with power: DP-SGD, every update, likelihood ratio (not in the paper) | "
                    f"[`audit_control.csv`](audit_control.csv) | 95% eps lower bound: {found} |")
    path = results / "audit_one_run.csv"
    if path.exists():
        t, _ = provenance.read_csv(path)
        best = t[(t.verdict != "not_run_yet") & t.best.astype(str).str.lower().eq("true")]
        found = "; ".join(f"{r.method} {r.model} ({r.model_label}), {r.score}: {r.eps_lower_bound:.2f} at claimed "
                          f"{r.claimed_eps:.2f} ({r.correct:.0f} of {r.guesses:.0f} guesses, {r.canaries:.0f} canaries)"
                          for r in best.itertuples()) or "no run has landed"
        waiting = int((t.verdict == "not_run_yet").sum())
        rows.append(f"| One-run audit of real training (Steinke et al. 2023; not in the paper) | "
                    f"[`audit_one_run.csv`](audit_one_run.csv), [`audit_one_run.png`]({figures}/audit_one_run.png) | "
                    f"95% eps lower bound: {found}" + (f"; {waiting} run(s) not run yet" if waiting else "") + " |")
    path = results / "table7_high_orders.csv"
    if path.exists():
        t, _ = provenance.read_csv(path)
        found = "; ".join(f"{r.dataset} eps={r.eps:g}: floor {r.floor:.3f} for order caps up to "
                          f"{r.floor_holds_to_order:,}, certified from order {r.first_order_certifying:,} at "
                          f"r < {r.r_max_at_order:.2g} where kappa = {r.kappa_at_r_max:.1e}" for r in t.itertuples())
        rows.append(f"| Table 7, the \"—\" cells beyond the order cap | [`table7_high_orders.csv`](table7_high_orders.csv) "
                    f"| {found} |")
    return rows
