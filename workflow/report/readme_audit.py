"""The generated blocks of docs/audit.md (see :mod:`workflow.report.readme`): tables rendered from
``results/<profile>/audit_*.csv``, one row per CSV row or per group of rows, no numbers in prose. What a column means
is said by its header and by the hand-written text around the block; the verdicts are the notebooks' own (each row
faces the claim for its own adjacency: :mod:`workflow.audit.claims`)."""

from __future__ import annotations

import math

import pandas as pd

from dirdp import methods
from dirdp.protocol import fmt_eps
from workflow.report.markdown import table

METHOD = methods.audit_label  # a row's method as the audit's tables name it ("non-private" stays itself)
ADJ = {"add": "add/remove", "replace": "replace one"}


def _dirichlet(method: str) -> bool:
    """Whether the row's method steps by the Dirichlet loss at r* (Algorithm 1), not by DP-SGD's clipping and noise."""
    return getattr(methods.SPECS.get(method), "audit", None) == methods.DIRICHLET


def _eps(v: float, digits: int = 2) -> str:
    return "none (no finite claim)" if not math.isfinite(v) else f"{v:.{digits}f}"


def _bold_if(lb: float, claim: float) -> str:
    return f"**{lb:.2f}**" if math.isfinite(claim) and lb > claim else f"{lb:.2f}"


def reconstruction(src) -> str:
    t = src.csv("audit_reconstruction")
    dense = t[t.attack.str.startswith("dense")]
    inv = t[t.attack.str.startswith("gradient inversion")].drop_duplicates(["model", "method", "batch_size"])
    rows = [[dense.attack.iloc[0], dense.model.iloc[0], METHOD(dense.method.iloc[0]), 1, len(dense),
             f"{dense.rstar.iloc[0]:.4f}", f"relative error: median {dense.max_rel_error.median():.1e}, "
             f"max {dense.max_rel_error.max():.1e}"]]
    for r in inv.sort_values(["model", "method", "batch_size"]).itertuples():
        rows.append([f"{r.attack} ({r.attack_steps:.0f} steps)", r.model, METHOD(r.method), f"{r.batch_size:.0f}",
                     int(((t.attack == r.attack) & (t.model == r.model) & (t.method == r.method)
                          & (t.batch_size == r.batch_size)).sum()),
                     f"{r.rstar:.4f}" if _dirichlet(r.method) else f"sigma = {r.noise_multiplier:.4f}",
                     f"mean SSIM {r.ssim_mean:.2f}"])
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
    rows = [[METHOD(r.method), fmt_eps(r.claimed_eps), f"{r.n_members:,.0f}", f"{r.test_accuracy:.1f}",
             f"{r.auc:.3f}", "smoke check: the target did not learn" if r.test_accuracy < 90 else "smoke check"]
            for r in m.itertuples()]
    return table(["method", "claimed eps", "members", "test accuracy (%)", "AUC (float32 loss, ties 1/2)", "role"],
                  rows)


def membership_learned(src) -> str:
    rel = src.csv("audit_released_models").copy()
    missing = [c for c in ("null_auc", "auc_minus_null_ci_low", "auc_minus_null_ci_high", "auc_allowed_by_claim")
               if c not in rel.columns]
    if missing:
        raise ValueError(f"results/{src.profile}/audit_released_models.csv has no {', '.join(missing)} column: rerun "
                         "the notebook audit_released_models for this profile.")
    rel["seed"] = [_run_named(src, run, "audit_released_models")["seed"] for run in rel.run]
    rel["dataset"] = rel.data.str.split(":").str[0]
    rel = rel.sort_values(["dataset", "claimed_eps", "method", "model", "seed"], kind="stable")
    rows = [[r.dataset, r.model, METHOD(r.method), fmt_eps(r.claimed_eps), r.seed,
             f"{r.test_accuracy:.2f}", f"{r.n_members:,.0f} / {r.n_non_members:,.0f}", f"{r.auc:.3f}",
             f"{r.null_auc:.3f}",
             f"{r.auc_minus_null:+.3f} [{r.auc_minus_null_ci_low:+.3f}, {r.auc_minus_null_ci_high:+.3f}]",
             f"{r.auc_allowed_by_claim:.3f}",
             f"{r['tpr_at_fpr_0.01']:.2%}", f"{r.loss_auc:.3f}", f"{r.loss_tied_records:,.0f}"]
            for _, r in rel.iterrows()]
    return table(["data", "model", "method", "claimed eps", "seed", "test accuracy (%)", "members / non-members",
                   "AUC", "null AUC", "AUC - null [95% CI]", "AUC the claim allows", "TPR at 1% FPR",
                   "loss AUC (float32, ties 1/2)", "records tied in the loss"], rows)


def subspace(src) -> str:
    t = src.csv("audit_subspace")
    if "matched_claim_eps" not in t.columns:
        raise ValueError(f"results/{src.profile}/audit_subspace.csv has no matched_claim_eps column: rerun the "
                         "notebook audit_subspace for this profile.")
    rows = [[r.setting, _model(r.model), METHOD(r.method), ADJ[r.adjacency], r.adversary_sees,
             f"{_eps(r.matched_claim_eps)} ({r.matched_claim_by})", f"{r.trials_per_world:,.0f}",
             _bold_if(r.eps_lower_bound, r.matched_claim_eps), f"{r.ceiling:.2f}", r.verdict, f"{r.res0_max:.1e}",
             f"{r.res1_median:.1e}", f"{r.wall_time_s / 60:.0f} min"] for r in t.itertuples()]
    counts = (t.assign(alg=t.method.map(METHOD), adj=t.adjacency.map(ADJ))
              .groupby(["alg", "adversary_sees", "adj", "verdict"], sort=False).size().reset_index(name="rows"))
    return (table(["setting", "model", "method", "adjacency", "the adversary sees", "claim for this adjacency",
                    "trials per world", "eps lower bound (95%)", "most these trials can show", "verdict",
                    "residual, world 0 (max)", "residual, world 1 (median)", "time (setting)"], rows)
            + "\n\nVerdicts, counted:\n\n"
            + table(["method", "the adversary sees", "adjacency", "verdict", "rows"],
                     [[r.alg, r.adversary_sees, r.adj, r.verdict, r.rows] for r in counts.itertuples()]))


def _model(label: str) -> str:
    name = label.split(" (")[0]
    return {"papernot_cnn w=1": "tanh CNN", "inception w=0.25": "Inception 0.25x", "inception w=1": "Inception"}.get(
        name, name)


def batchnorm(src) -> str:
    t = src.csv("audit_batchnorm")
    if "median_batch_max_logit_change" not in t.columns:
        raise ValueError(f"results/{src.profile}/audit_batchnorm.csv has the old columns: rerun the notebook "
                         "audit_batchnorm for this profile.")
    infl = t[t.measure.str.startswith("influence")]
    a = table(["model", "Poisson batches (one random replacement each)", "batch size (median)",
                "largest logit change of another record (max over batches)",
                "median over batches of each batch's largest change", "median over batches of each batch's median",
                "others' summed Renyi divergence: largest measured", "its median", "Lemma 9 eps_M for the one record"],
               [[r.model, f"{r.trials:.0f}", f"{r.batch_median:.0f}", f"{r.max_logit_change:.3g}",
                 f"{r.median_batch_max_logit_change:.3g}", f"{r.median_batch_median_logit_change:.3g}",
                 f"{r.value:.2g}", f"{r.others_rdp_median:.2g}", f"{r.reference:.3g}"] for r in infl.itertuples()])
    stats = t[t.measure.str.startswith("running statistics")]
    exact = stats["exact_bound"] if "exact_bound" in stats else pd.Series(math.nan, index=stats.index)
    b = table(["test", "adjacency", "trials per world", "claim for this adjacency", "eps lower bound (95%)",
                "most these trials can show", "exact bound", "verdict"],
               [[r.measure, ADJ[r.adjacency], f"{r.trials:.0f}", f"{_eps(r.matched_claim_eps)} ({r.matched_claim_by})",
                 _bold_if(r.value, r.matched_claim_eps), f"{r.ceiling:.2f}", _exact(x), r.verdict]
                for r, x in zip(stats.itertuples(), exact)])
    mia = t[t.measure.str.startswith("last-batch")]
    acc = t[t.measure == "test accuracy"]
    c = table(["measure", "model", "value", "statistic", "TPR at 1% FPR", "records"],
               [[r.measure, r.model, f"{r.value:.3f}" if r.statistic == "AUC" else f"{r.value:.2f}", r.statistic,
                 f"{r.tpr_at_fpr_0_01:.1%}" if isinstance(r.tpr_at_fpr_0_01, float) and math.isfinite(r.tpr_at_fpr_0_01)
                 else "-", f"{r.members:,.0f}" if isinstance(r.members, float) and math.isfinite(r.members) else "-"]
                for r in pd.concat([mia, acc]).itertuples()])
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


def _exact(v) -> str:
    """An exact bound as the tables print it: "unbounded" for inf, "-" where the audit computes none."""
    v = float(v)
    return "unbounded" if math.isinf(v) else ("-" if math.isnan(v) else f"{v:.1f}")


PRECISION = {"bf16": "bf16 autocast + channels_last", "fp32": "fp32"}
CONV_BIAS = {True: "yes (footnote 2)", False: "no"}


def _flag(v) -> bool:
    """A CSV's boolean cell (True/False, or the strings pandas leaves when a column mixes types); missing: False."""
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return False if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v)


def first_layer(src) -> str:
    """The exact final-model test on the paper's Inception (results/<profile>/audit_first_layer.csv): one row per
    setting (width, precision, conv bias), neighbouring relation and statistic. A CSV written before the
    ``conv_bias`` column (every convolution bias-free) reads as conv_bias False."""
    t = src.csv("audit_first_layer").copy()
    t["conv_bias"] = t["conv_bias"].map(_flag) if "conv_bias" in t.columns else False
    return table(["model", "precision", "conv bias", "q", "T", "adjacency", "the adversary says D when",
                   "trials per world", "D' trials that moved (FP)", "D trials that did not (FN)",
                   "eps lower bound (95%)", "most these trials can show", "exact bound", "claim for this adjacency",
                   "canary sampled (median)", "P(canary never sampled) = (1 - q)^T", "CPU time", "verdict (trials)",
                   "verdict (exact)"],
                  [[_model(r.model), PRECISION.get(r.precision, r.precision), CONV_BIAS[r.conv_bias], f"{r.q:.5f}",
                    f"{r.T:,.0f}", ADJ[r.adjacency], r.statistic_is,
                    f"{r.trials_per_world:.0f}", f"{r.false_positives:.0f}", f"{r.false_negatives:.0f}",
                    _bold_if(r.eps_lower_bound, r.matched_claim_eps), f"{r.ceiling:.2f}", _exact(r.exact_bound),
                    f"{_eps(r.matched_claim_eps)} ({r.matched_claim_by})", f"{r.canary_sampled_median:.0f}",
                    f"{r.never_sampled_probability:.1e}", f"{r.cpu_s_total / 60:.0f} min", r.verdict, r.verdict_exact]
                   for r in t.itertuples()])
