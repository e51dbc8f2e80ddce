"""The README's privacy table and the docs blocks of the tests it draws on (see :mod:`workflow.report.readme`): the
control with power (``audit_control.csv``), the one-run audit (``audit_one_run.csv``), and the table of the tests
that decide the paper's claim for the trained model (those two, the exact first-layer test, the subspace test's
null). Typed fields from the CSVs, labels applied here; no numbers in prose."""

from __future__ import annotations

from pathlib import Path

from dirdp import methods
from workflow.audit.claims import control_verdict
from workflow.audit.subspace_rows import FINAL_MODEL
from workflow.report.labels import MODELS
from workflow.report.markdown import columns, line, table
from workflow.report import labels
from workflow.report.readme_audit import ADJ, METHOD, _bold_if, _exact, _flag, bound

# the control's verdict (workflow.audit.claims.control_verdict, from its numbers), labelled here
CONTROL_VERDICTS = {"sound_with_power": "sound, with power: 0 < bound <= DP-SGD's own eps",
                    "no_power": "no power at these trials (bound 0)",
                    "above_own_eps": "above DP-SGD's own eps: the audit or the code is wrong"}


def control(src) -> str:
    """The control with power (results/<profile>/audit_control.csv): DP-SGD at the same claim, every update, the
    likelihood-ratio test, beside DP-SGD's own epsilon and the bound's ratio to it."""
    t = src.csv("audit_control")
    return columns(t.assign(verdict=[CONTROL_VERDICTS[control_verdict(lb, own)]
                                     for lb, own in zip(t.eps_lower_bound, t.mechanism_eps)],
                            ratio=t.eps_lower_bound / t.mechanism_eps), [
        ("method (mechanism)", "{method:method} ({mechanism})"), ("q", "{q:.5g}"), ("T", "{T:,.0f}"),
        ("claim (Opacus RDP)", "{claimed_eps:g} ({certified_eps:.4f})"),
        ("DP-SGD's own eps", "{mechanism_eps:.3f} ({mechanism_eps_by})"),
        ("statistic", lambda r: "likelihood ratio, every update"), ("eps lower bound (95%)", "{eps_lower_bound:.2f}"),
        ("bound / own eps", "{ratio:.2f}"), ("FPR / FNR (held out)", "{fpr:.3g} / {fnr:.3g}"),
        ("held-out trials per world", "{held_out_per_world:,.0f}"), ("verdict", "{verdict}")])


ONE_RUN_VERDICTS = {"claim_violated": "claim violated", "no_violation_found": "no violation found",
                    "too_few_canaries": "too few canaries to test the claim", "not_run_yet": "not run yet"}
SCORES = {"white_box": "white box: displacement along the canary's descent direction",
          "black_box": "black box: the final model's logit margin"}


def _model_name(model: str, label: str) -> str:
    return MODELS.get(model, model) + (
        f" ({label})" if isinstance(label, str) and label else "")


def _best(t):
    """The one-run rows with a result, at the best k of their grid."""
    return t[(t.verdict != "not_run_yet") & t.best.map(_flag).astype(bool)]


def one_run(src) -> str:
    """The one-run audit (results/<profile>/audit_one_run.csv): per run and score, the best k of the grid (its bound
    holds at the CSV's confidence for the whole grid), against the run's own add/remove claim, with Mahloujifar et
    al.'s f-DP reading of the same guesses beside it; a declared run with no result is listed as not run yet."""
    t = src.csv("audit_one_run")
    done = _best(t)
    done = done.assign(model=[_model_name(m, lab) for m, lab in zip(done.model, done.model_label)],
                       score=done.score.map(SCORES), verdict=done.verdict.map(ONE_RUN_VERDICTS))
    head = ["method", "model", "q", "T", "canaries", "score", "claim, add/remove (accountant)", "its own eps",
            "guesses k (best of the grid)", "correct", "eps lower bound (95%, the grid's)",
            "f-DP: Gaussian mu rejected (its eps)", "most k correct guesses can show", "AUC of the score",
            "test accuracy (%)", "verdict"]
    text = columns(done, list(zip(head, [
        "{method:method}", "{model}", "{q:.5f}", "{T:,.0f}", "{canaries:,.0f} ({canaries_included:,.0f} trained on)",
        "{score}", "{claimed_eps:.2f} ({claim_by})", "{own_eps:.2f}", "{k:,.0f}", "{correct:,.0f} of {guesses:,.0f}",
        bound("eps_lower_bound", "claimed_eps"), "{gdp_mu_lower_bound:.3f} ({gdp_eps_if_gaussian:.2f})",
        "{most_these_guesses_can_show:.2f}", "{score_auc:.3f}",
        "{test_accuracy:.2f}", "{verdict}"])))
    return text + "".join("\n" + line(["-", Path(r).stem, *["-"] * 13, ONE_RUN_VERDICTS["not_run_yet"]])
                          for r in t[t.verdict == "not_run_yet"].run)


def privacy(src) -> str:
    """The README's privacy table: the tests that decide the paper's claim for the trained model, one row each. The
    exact first-layer test on the paper's Inception at 1x (each setting's own statistic: either of the two, or with a
    conv bias the weights' alone), the one-run audit's best k per run and score, the control with power, and the
    final-model subspace test on the GroupNorm Inception at the paper's q (a null)."""
    rows = []
    fl = src.csv("audit_first_layer").copy()
    fl["conv_bias"] = fl["conv_bias"].map(_flag)
    own = fl[(fl.width == 1.0)
             & ((fl.statistic == "either") | (fl.conv_bias & (fl.statistic == "first_conv")))]
    for r in own.itertuples():
        rows.append(["exact first-layer test (D' = one record zero at the input)",
                     f"Inception 1x, {r.precision}" + (", conv bias" if r.conv_bias else ""), "final model",
                     ADJ[r.adjacency], f"{r.matched_claim_eps:.2f}",
                     f"D' moved in {r.false_positives:.0f} of {r.trials_per_world:.0f}, D stayed in "
                     f"{r.false_negatives:.0f} of {r.trials_per_world:.0f}; P_D(stayed) = (1 - q)^T = "
                     f"{r.never_sampled_probability:.1e}",
                     _bold_if(r.eps_lower_bound, r.matched_claim_eps), _exact(r.exact_bound), r.verdict_exact])
    if (src.folder / "audit_one_run.csv").exists():
        t = src.csv("audit_one_run")
        for r in _best(t).itertuples():
            rows.append([f"one-run audit, {r.canaries:,.0f} canaries, {r.score.replace('_', ' ')}",
                         f"{METHOD(r.method)}, {_model_name(r.model, r.model_label)}", "final model", ADJ["add"],
                         f"{r.claimed_eps:.2f}", f"{r.correct:,.0f} of {r.guesses:,.0f} guesses right",
                         _bold_if(r.eps_lower_bound, r.claimed_eps), "-", ONE_RUN_VERDICTS[r.verdict]])
        for r in t[t.verdict == "not_run_yet"].itertuples():
            rows.append(["one-run audit", Path(r.run).stem, "final model", ADJ["add"], "-", "not run yet", "-", "-",
                         ONE_RUN_VERDICTS[r.verdict]])
    for r in src.csv("audit_control").itertuples():
        rows.append([f"control: {METHOD(r.method)}, likelihood-ratio test, q = {r.q:.3g}, T = {r.T:,.0f}",
                     r.model, "every update", ADJ["add"], f"{r.claimed_eps:.2f}",
                     f"its own eps {r.mechanism_eps:.3f}; bound / own eps = {r.eps_lower_bound / r.mechanism_eps:.2f}",
                     f"{r.eps_lower_bound:.2f}", "-",
                     CONTROL_VERDICTS[control_verdict(r.eps_lower_bound, r.mechanism_eps)]])
    sub = src.csv("audit_subspace", ["width", "norm"], "audit_subspace")
    null = sub[(sub.method == methods.ALG1) & (sub.adversary_sees == FINAL_MODEL) & (sub.q < 1)
               & (sub.model == "inception")]
    for r in null.itertuples():
        rows.append([f"subspace test, q = {r.q:.3g}, T = {r.T:,.0f}",
                     f"{METHOD(r.method)}, {labels.audited(r.model, r.width)} ({labels.NORMS[r.norm]})", "final model",
                     ADJ[r.adjacency], f"{r.matched_claim_eps:.2f}",
                     f"{r.trials_per_world:.0f} trials a world", _bold_if(r.eps_lower_bound, r.matched_claim_eps),
                     "-", r.verdict])
    return table(["test", "model", "the adversary sees", "neighbours", "claim", "what was seen",
                  "eps lower bound (95%)", "exact bound", "verdict"], rows)
