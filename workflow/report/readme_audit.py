"""The generated blocks of docs/audit.md (see :mod:`workflow.report.readme`): tables rendered from
``results/<profile>/audit_*.csv``, one row per CSV row or per group of rows, no numbers in prose. What a column means
is said by its header and by the hand-written text around the block; the verdicts are the notebooks' own (each row
faces the claim for its own adjacency: :mod:`workflow.audit.claims`)."""

from __future__ import annotations

import math
from typing import Callable

import pandas as pd

from dirdp import methods
from dirdp.protocol import fmt_eps
from workflow.report import labels
from workflow.report.labels import ADJACENCIES as ADJ
from workflow.report.labels import ATTACKS
from workflow.report.labels import exact as _exact
from workflow.report.labels import flag as _flag
from workflow.report.markdown import columns, table

METHOD = methods.audit_label  # a row's method as the audit's tables name it ("non-private" stays itself)


def _dirichlet(method: str) -> bool:
    """Whether the row's method steps by the Dirichlet loss at r* (Algorithm 1), not by DP-SGD's clipping and noise."""
    return getattr(methods.SPECS.get(method), "audit", None) == methods.DIRICHLET


def _bold_if(lb: float, claim: float) -> str:
    return f"**{lb:.2f}**" if math.isfinite(claim) and lb > claim else f"{lb:.2f}"


def bound(lower: str, claim: str) -> Callable[[dict], str]:
    """A column's cell: the row's eps lower bound, in bold where it exceeds the row's (finite) claim."""
    return lambda r: _bold_if(r[lower], r[claim])


EXACT = 1e-4  # a reconstruction whose largest pixel error is at most this fraction of the image's largest pixel


def reconstruction(src) -> str:
    """``audit_reconstruction.csv``: the dense first layer's inversion, one row per method and batch size over its
    images (how many came back within :data:`EXACT`); gradient inversion, one row per model, method and batch size."""
    t = src.csv("audit_reconstruction")
    rows = []
    for (attack, model, width, method, batch), g in t.groupby(["attack", "model", "width", "method", "batch_size"],
                                                             sort=False):
        r = g.iloc[0]
        noise = f"{r.rstar:.4f}" if _dirichlet(method) else f"sigma = {r.noise_multiplier:.4f}"
        if attack == "dense_first_layer":
            result = (f"median PSNR {g.psnr.median():.0f} dB; relative error at most {EXACT:g}: "
                      f"{int((g.max_rel_error <= EXACT).sum())} of {len(g)}; median {g.max_rel_error.median():.1e}")
        else:
            result = f"mean PSNR {r.psnr_mean:.1f} dB, mean SSIM {r.ssim_mean:.2f} ({r.attack_steps:.0f} steps)"
        rows.append([ATTACKS[attack], labels.audited(model, width), METHOD(method),
                     f"{batch:.0f}", len(g) if attack == "dense_first_layer" else f"{batch:.0f}", noise, result])
    return table(["attack", "model", "method", "batch", "images", "r* (Alg. 1) / sigma (DP-SGD)", "result"], rows)


def canary(src) -> str:
    t = src.csv("audit_canary")
    rows = []
    for r in t.itertuples():
        if methods.is_local(r.method):  # LATENT's release of one record
            who, q, steps = f"{METHOD(r.method)} ({r.mechanism})", "one release", "1"
            claim = f"{fmt_eps(r.claimed_eps)} (local DP; exact pair loss {r.certified_eps:,.0f})"
            exact = no_finite = "-"
        else:
            who, q, steps = f"{METHOD(r.method)} ({r.mechanism})", f"{r.q:g}", f"{r.T:,.0f}"
            claim = f"{fmt_eps(r.claimed_eps)} ({r.certified_eps:.4f})"
            exact = f"{r.eps_exact_bound:.1f}" if math.isfinite(r.eps_exact_bound) else "-"
            # the event "statistic != 0" has probability 0 without the canary (checked: dprime_stat_max == 0) and
            # 1 - (1 - q)^T with it: no finite eps satisfies (eps, delta)-DP for delta below that
            no_finite = (f"{-math.expm1(r.T * math.log1p(-r.q)):.5f}"
                         if _dirichlet(r.method) and r.dprime_stat_max == 0 else "-")
        rows.append([who, q, steps, claim, r.statistic, _bold_if(r.eps_lower_bound, r.claimed_eps),
                     f"{r.fpr:g} / {r.fnr:g}", f"{r.held_out_per_world:,.0f}", exact, no_finite,
                     f"{r.dprime_stat_max:.3g}" if isinstance(r.dprime_stat_max, float) and math.isfinite(
                         r.dprime_stat_max) else "-"])
    return table(["method (mechanism)", "q", "T", "claimed eps (its own accountant)", "statistic",
                   "eps lower bound (95%)", "FPR / FNR (held out)", "held-out trials per world",
                   "exact bound, one direction", "no finite eps for delta below", "largest D' statistic"], rows)


def membership(src) -> str:
    """The old controlled experiment (targets trained on 1,000 records): a smoke check, since its private targets
    did not learn (the test-accuracy column)."""
    m = src.csv("audit_membership")
    return columns(m.assign(role=["smoke check: the target did not learn" if a < 90 else "smoke check"
                                  for a in m.test_accuracy]),
                   [("method", "{method:method}"), ("claimed eps", "{claimed_eps:eps}"), ("members", "{n_members:,.0f}"),
                    ("test accuracy (%)", "{test_accuracy:.1f}"), ("AUC (float32 loss, ties 1/2)", "{auc:.3f}"),
                    ("role", "{role}")])


def membership_learned(src) -> str:
    rel = src.csv("audit_released_models", ["null_auc", "auc_minus_null_ci_low", "auc_minus_null_ci_high",
                                            "auc_allowed_by_claim"]).copy()
    named = [_run_named(src, run, "audit_released_models") for run in rel.run]
    rel["seed"], rel["dataset"] = [r["seed"] for r in named], [r["dataset"] for r in named]
    rel = rel.sort_values(["dataset", "claimed_eps", "method", "model", "seed"], kind="stable")
    return columns(rel, [
        ("data", "{dataset}"), ("model", "{model}"), ("method", "{method:method}"), ("claimed eps", "{claimed_eps:eps}"),
        ("seed", "{seed}"), ("test accuracy (%)", "{test_accuracy:.2f}"),
        ("members / non-members", "{n_members:,.0f} / {n_non_members:,.0f}"), ("AUC", "{auc:.3f}"),
        ("null AUC", "{null_auc:.3f}"),
        ("AUC - null [95% CI]", "{auc_minus_null:+.3f} [{auc_minus_null_ci_low:+.3f}, {auc_minus_null_ci_high:+.3f}]"),
        ("AUC the claim allows", "{auc_allowed_by_claim:.3f}"), ("TPR at 1% FPR", lambda r: f"{r['tpr_at_fpr_0.01']:.2%}"),
        ("loss AUC (float32, ties 1/2)", "{loss_auc:.3f}"), ("records tied in the loss", "{loss_tied_records:,.0f}")])


def subspace(src) -> str:
    t = src.csv("audit_subspace", ["matched_claim_eps", "width", "norm"])
    rows = columns(t, [
        ("setting", "{setting}"), ("model", lambda r: labels.audited(r["model"], r["width"])),
        ("method", "{method:method}"),
        ("adjacency", "{adjacency:adjacency}"), ("the adversary sees", "{adversary_sees}"),
        ("claim for this adjacency", "{matched_claim_eps:claim} ({matched_claim_by})"),
        ("trials per world", "{trials_per_world:,.0f}"), ("eps lower bound (95%)", bound("eps_lower_bound", "matched_claim_eps")),
        ("most these trials can show", "{ceiling:.2f}"), ("verdict", "{verdict}"),
        ("residual, world 0 (max)", "{res0_max:.1e}"), ("residual, world 1 (median)", "{res1_median:.1e}"),
        ("time (setting)", "{wall_time_s:min}")])
    counts = (t.assign(alg=t.method.map(METHOD), adj=t.adjacency.map(ADJ))
              .groupby(["alg", "adversary_sees", "adj", "verdict"], sort=False).size().reset_index(name="rows"))
    return (rows + "\n\nVerdicts, counted:\n\n"
            + table(["method", "the adversary sees", "adjacency", "verdict", "rows"],
                     [[r.alg, r.adversary_sees, r.adj, r.verdict, r.rows] for r in counts.itertuples()]))


def batchnorm(src) -> str:
    t = src.csv("audit_batchnorm", ["kind", "median_batch_max_logit_change", "exact_bound"])
    infl = t[t.kind == "influence"]
    a = columns(infl, [
        ("model", "{model}"), ("Poisson batches (one random replacement each)", "{trials:.0f}"),
        ("batch size (median)", "{batch_median:.0f}"),
        ("largest logit change of another record (max over batches)", "{max_logit_change:.3g}"),
        ("median over batches of each batch's largest change", "{median_batch_max_logit_change:.3g}"),
        ("median over batches of each batch's median", "{median_batch_median_logit_change:.3g}"),
        ("others' summed Renyi divergence: largest measured", "{value:.2g}"), ("its median", "{others_rdp_median:.2g}"),
        ("Lemma 9 eps_M for the one record", "{reference:.3g}")])
    stats = t[t.kind == "running_statistics"]
    b = columns(stats, [
        ("test", "{measure}"), ("adjacency", "{adjacency:adjacency}"), ("trials per world", "{trials:.0f}"),
        ("claim for this adjacency", "{matched_claim_eps:claim} ({matched_claim_by})"),
        ("eps lower bound (95%)", bound("value", "matched_claim_eps")), ("most these trials can show", "{ceiling:.2f}"),
        ("exact bound", "{exact_bound:exact}"), ("verdict", "{verdict}")])

    def finite(fmt):
        return lambda v: format(v, fmt) if isinstance(v, float) and math.isfinite(v) else "-"

    c = columns(pd.concat([t[t.kind == "last_batch"], t[t.kind == "test_accuracy"]]), [
        ("measure", "{measure}"), ("model", "{model}"),
        ("value", lambda r: f"{r['value']:.3f}" if r["statistic"] == "AUC" else f"{r['value']:.2f}"),
        ("statistic", "{statistic}"), ("TPR at 1% FPR", lambda r: finite(".1%")(r["tpr_at_fpr_0_01"])),
        ("records", lambda r: finite(",.0f")(r["members"]))])
    return a + "\n\n" + b + "\n\n" + c


def _run_named(src, path: str, table: str) -> dict:
    """The run of ``src``'s runs folder that a row of ``results/<profile>/<table>.csv`` names by its JSON's path."""
    from pathlib import Path

    from workflow.report.readme_campaign import ReadmeError

    found = [r for r in src.runs if Path(r["path"]).parts[-2:] == Path(path).parts[-2:]]
    if len(found) != 1:
        raise ReadmeError(f"{path}: the run named by results/{src.profile}/{table}.csv is not among {src.runs_dir}'s "
                          f"runs (found {len(found)}): rerun the notebook {table} for this profile, or restore that "
                          "run's JSON.")
    return found[0]


def first_layer(src) -> str:
    """The exact final-model test on the paper's Inception (results/<profile>/audit_first_layer.csv): one row per
    setting (width, precision, conv bias), neighbouring relation and statistic."""
    from workflow.audit.first_layer import MODEL as first_layer_model

    t = src.csv("audit_first_layer").copy()
    t["conv_bias"] = t["conv_bias"].map(_flag)
    return columns(t, [
        ("model", lambda r: labels.audited(first_layer_model, r["width"])), ("precision", "{precision:precision}"),
        ("conv bias", "{conv_bias:conv_bias}"),
        ("q", "{q:.5f}"), ("T", "{T:,.0f}"), ("adjacency", "{adjacency:adjacency}"),
        ("the adversary says D when", "{statistic_is}"), ("trials per world", "{trials_per_world:.0f}"),
        ("D' trials that moved (FP)", "{false_positives:.0f}"), ("D trials that did not (FN)", "{false_negatives:.0f}"),
        ("eps lower bound (95%)", bound("eps_lower_bound", "matched_claim_eps")),
        ("most these trials can show", "{ceiling:.2f}"), ("exact bound", "{exact_bound:exact}"),
        ("claim for this adjacency", "{matched_claim_eps:claim} ({matched_claim_by})"),
        ("canary sampled (median)", "{canary_sampled_median:.0f}"),
        ("P(canary never sampled) = (1 - q)^T", "{never_sampled_probability:.1e}"), ("CPU time", "{cpu_s_total:min}"),
        ("verdict (trials)", "{verdict}"), ("verdict (exact)", "{verdict_exact}")])
