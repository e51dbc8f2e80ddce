"""The README's generated blocks for the privacy audit (see :mod:`dirdp.report.readme`): reconstruction, the
canary audit and membership inference, from ``results/<profile>/audit_*.csv`` and the executed audit notebook."""

from __future__ import annotations

import math

import pandas as pd

from dirdp.protocol import fmt_eps

METHOD = {"alg1": "Algorithm 1", "dpsgd": "DP-SGD", "latent": "LATENT", "non-private": "non-private"}


def _ssims(t: pd.DataFrame, model: str, method: str) -> tuple[str, str]:
    rows = t[(t.model == model) & (t.method == method)].sort_values("batch_size")
    return (" / ".join(f"{s:.2f}" for s in rows.ssim_mean), " / ".join(f"{b:.0f}" for b in rows.batch_size))


def reconstruction(src) -> str:
    t = src.csv("audit_reconstruction")
    dense = t[t.attack.str.startswith("dense")]
    inv = t[t.attack.str.startswith("gradient inversion")]
    d0 = dense.iloc[0]
    cnn_a, batches = _ssims(inv, "papernot_cnn", "alg1")
    cnn_d, _ = _ssims(inv, "papernot_cnn", "dpsgd")
    inception = inv[inv.model.str.startswith("inception")]
    steps = int(inv.attack_steps.dropna().iloc[0])
    return (
        f"- **Reconstruction, dense first layer (exact).** One Algorithm-1 step at claimed eps = "
        f"{fmt_eps(d0.claimed_eps)} (alpha = 3, r* = {d0.rstar:.4f} for q = {inv.q.iloc[0]:g}, T = "
        f"{inv['T'].iloc[0]:.0f}) on a {d0.model.replace('MLP ', '')} MLP gives back each of {len(dense)} MNIST test "
        f"images from the first layer's update: relative error median {dense.max_rel_error.median():.1e}, max "
        f"{dense.max_rel_error.max():.1e} (float32). The same on a DP-SGD update at the same claimed eps gives noise "
        "(`tests/test_audit.py`).\n"
        f"- **Gradient inversion, convolutional models** (Geiping et al. 2020, {steps} iterations, found images "
        f"matched to the truth by the best assignment; `results/{src.profile}/audit_reconstruction.csv`, "
        f"`figures/{src.profile}/audit_reconstruction.png`). On Papernot et al.'s tanh CNN, Algorithm 1 updates "
        f"give mean SSIM {cnn_a} (batch {batches}); DP-SGD updates at the same claimed eps give {cnn_d}. On the "
        f"paper's MNIST Inception (0.25x width, BatchNorm + ReLU) this attack's reconstructions reach mean SSIM "
        f"{inception.ssim_mean.max():.2f} at most for either method: this attack at this budget finds little there, "
        "which is not evidence of privacy (the canary audit below is).")


def canary(src) -> str:
    t = src.csv("audit_canary")
    final = t[(t.statistic == "final") | (t.method == "latent")]
    r0 = final.iloc[0]
    duration = src.notebook("audit_privacy")["metadata"].get("papermill", {}).get("duration")
    out = [f"- **Canary audit** (softmax regression on 7x7-pooled MNIST, D' = {r0.n_dprime:.0f} real records, "
           f"D = D' + a canary; {r0.trials_per_world:,.0f} trainings per world, threshold chosen on "
           f"{r0.trials_per_world - r0.held_out_per_world:,.0f}, bound measured on the other "
           f"{r0.held_out_per_world:,.0f}; {r0.confidence:.0%} Clopper-Pearson; "
           f"`results/{src.profile}/audit_canary.csv`"
           + (f"; {duration:,.0f} s for the whole notebook on one core" if duration else "") + "):", "",
           "  | method | q | T | claimed eps (certified by its own accountant) | statistic | eps lower bound "
           f"({r0.confidence:.0%}) | FPR / FNR (held out) |", "  |---|---|---|---|---|---|---|"]
    for r in final.itertuples():
        if r.method == "latent":
            who, q, steps = f"LATENT ({r.mechanism.split(',')[0].replace('alpha', 'UER, alpha')})", "one release", "1"
            claim = f"{fmt_eps(r.claimed_eps)} (local DP; exact pair loss {r.certified_eps:,.0f})"
        else:
            who = f"{METHOD[r.method]} ({r.mechanism.split(',')[0].replace('sigma=', 'sigma = ').replace('r*=', 'r* = ')})"
            q, steps = f"{r.q:g}", f"{r.T:,.0f}"
            claim = f"{fmt_eps(r.claimed_eps)} ({r.certified_eps:.4f})"
        bound = f"**{r.eps_lower_bound:.2f}**" if r.eps_lower_bound > r.claimed_eps else f"{r.eps_lower_bound:.2f}"
        out.append(f"  | {who} | {q} | {steps} | {claim} | {r.statistic} | {bound} | {r.fpr:g} / {r.fnr:g} |")
    alg1 = final[final.method == "alg1"]
    ceiling = _ceiling(int(r0.held_out_per_world), float(r0.confidence))
    first = alg1.iloc[0]
    exact = ", ".join(f"**{r.eps_exact_bound:.1f}** at (q, T) = ({r.q:g}, {r['T']:.0f})" for _, r in alg1.iterrows())
    seq = t[(t.statistic == "sequence") & (t.method == "alg1")]
    same = (seq.eps_lower_bound.values.round(6) == alg1.eps_lower_bound.values.round(6)).all() if len(seq) == len(alg1) else False
    out += ["", f"  {ceiling:.2f} is the most {r0.held_out_per_world:,.0f} held-out trials per world can show (zero "
            "errors)" + ("; the sequence-of-updates statistic gives the same bounds" if same else "") + ". The "
            "Algorithm-1 result is exact, not only empirical: every record of D' is orthogonal to the canary "
            "direction u and Algorithm 1 adds nothing to the parameters, so theta_T u = 0 in *every* D' trial, while "
            "in D it is non-zero whenever the canary was sampled at least once (probability 1 - (1 - q)^T = "
            f"{1 - (1 - first.q) ** first['T']:.5f} at q = {first.q:g}, T = {first['T']:.0f}). The test "
            "\"theta_T u != 0\" therefore has FPR = 0 and FNR = (1 - q)^T, and FPR + e^eps FNR >= 1 - delta forces "
            f"eps >= -T ln(1 - q) + ln(1 - delta): {exact}, all claimed as eps = {fmt_eps(first.claimed_eps)} "
            "(`dirdp.audit.never_sampled_bound`; column `eps_exact_bound` of the CSV, beside `dprime_stat_max`, the "
            f"largest D' statistic of the trials: at most {alg1.dprime_stat_max.max():.2g} here, the premise "
            "checked). That is what this one test proves; the model may leak more. "
            f"`figures/{src.profile}/audit_eps_claimed_vs_lower_bound.png` shows both, setting by setting."]
    return "\n".join(out)


def _ceiling(n: int, confidence: float) -> float:
    """The largest bound ``n`` held-out trials per world can give: zero errors in both worlds."""
    from dirdp.audit.stats import epsilon_lower_bound
    return epsilon_lower_bound(false_positives=0, n_negatives=n, false_negatives=0, n_positives=n, delta=1e-5,
                               confidence=confidence).epsilon


def membership(src) -> str:
    m = src.csv("audit_membership")
    rel = src.csv("audit_released_models")
    m0 = m.iloc[0]

    def one(r) -> str:
        who = METHOD[r['method']] + ("" if math.isinf(r['claimed_eps']) else f" at eps = {fmt_eps(r['claimed_eps'])}")
        return (f"{who} AUC {r['auc']:.3f} (TPR {r['tpr_at_fpr_0.01']:.1%} at 1% FPR; its test accuracy {r['test_accuracy']:.1f}%)")

    alg1 = rel[rel.method == "alg1"].auc
    private = rel[rel.method != "non-private"]
    return (f"- **Membership inference, black box** (loss threshold; `results/{src.profile}/audit_membership.csv`, "
            f"`results/{src.profile}/audit_released_models.csv`). On a Papernot CNN trained on {m0.n_members:,.0f} "
            f"MNIST records (q = {m0.q:g}, T = {m0['T']:,.0f}): "
            + ", ".join(one(r) for _, r in m.iterrows()) + ". Models that barely learned say nothing either way. "
            f"On the models this profile released ({rel.n_members.iloc[0]:,.0f} training vs "
            f"{rel.n_non_members.iloc[0]:,.0f} test records each): AUC {alg1.min():.3f}-{alg1.max():.3f} for "
            f"Algorithm 1, {private.auc.min():.3f}-{private.auc.max():.3f} for every private model, and "
            + ", ".join(f"{a:.3f}" for a in rel[rel.method == "non-private"].auc) + " for the non-private ones.")
