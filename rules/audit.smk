"""The privacy audit: attacks on Algorithm 1 and the baselines (dirdp.audit), and membership inference
on the models this profile released."""

from workflow.audit.released import RELEASED_MODELS_N


rule audit_privacy:
    """The privacy audit (dirdp.audit): reconstruction of private images from one update (analytic on a
    dense first layer, gradient inversion on conv models), canary epsilon lower bounds for Algorithm 1,
    DP-SGD and LATENT at the same claimed eps, and membership inference at matched claimed eps."""
    input:
        deps(
            "notebooks/audit_privacy.ipynb",
            CODE,
        ),
    output:
        *report_outputs(
            [
                f"{RES}/audit_canary.csv",
                f"{RES}/audit_reconstruction.csv",
                f"{RES}/audit_membership.csv",
                f"{FIG}/audit_reconstruction.png",
                f"{FIG}/audit_eps_claimed_vs_lower_bound.png",
                f"{FIG}/audit_eps_claimed_vs_lower_bound.pdf",
                f"{NB}/audit_privacy.ipynb",
            ],
            "audit_privacy",
            AUDIT,
            "Reconstruction, canaries, membership",
            "attacks on Algorithm 1 and the baselines",
        ),
    log:
        f"{NB_LOGS}/audit_privacy.log",
    params:
        cmd=papermill("audit_privacy", {**config["audit"], "profile": PROFILE.name}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule audit_released_models:
    """Membership inference (logit margin) on every image model this profile released: each row read from its run's
    record (X.json.membership, dirdp.audit.released_model_row) where that was made for the same weights, n, seed and
    code, else computed from the weights and recorded; a run with neither (full-width weights are not in git) is
    listed as not audited."""
    input:
        deps(
            "notebooks/audit_released_models.ipynb",
            CODE,
            run_inputs(sorted(p for p, run in RUNS.items() if methods.spec(run.method).images)),
        ),
    output:
        *report_outputs(
            [
                f"{RES}/audit_released_models.csv",
                f"{NB}/audit_released_models.ipynb",
            ],
            "audit_released_models",
            AUDIT,
            "Released models",
            "membership inference on the released models",
        ),
    log:
        f"{NB_LOGS}/audit_released_models.log",
    params:
        cmd=papermill("audit_released_models", {"profile": PROFILE.name, "runs_dir": f"results/runs/{PROFILE.name}",
                                                "n": RELEASED_MODELS_N, "store": True}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule audit_subspace:
    """The white-box subspace canary test (workflow.audit.subspace) on the paper's model families, BatchNorm replaced by
    GroupNorm: Algorithm 1 at the paper's r* for eps = 1, DP-SGD at the same claimed eps as the control, add/remove
    and replace-one, one step at q = 1 and the MNIST q over T steps; the residual of each update outside the span of
    the auditor's records' logit Jacobians, and the epsilon lower bound it certifies."""
    input:
        deps(
            "notebooks/audit_subspace.ipynb",
            CODE,
        ),
    output:
        *report_outputs(
            [
                f"{RES}/audit_subspace.csv",
                f"{FIG}/audit_subspace_residuals.png",
                f"{FIG}/audit_subspace_residuals.pdf",
                f"{NB}/audit_subspace.ipynb",
            ],
            "audit_subspace",
            AUDIT,
            "Subspace canary test",
            "white-box subspace canary test",
        ),
    log:
        f"{NB_LOGS}/audit_subspace.log",
    params:
        cmd=papermill("audit_subspace", {**config["audit_subspace"], "profile": PROFILE.name}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule audit_batchnorm:
    """The BatchNorm channel (dirdp.audit.batchnorm) of the profile's released MNIST eps = 1 model: one record's
    influence on the other records' releases (Renyi divergence beside Lemma 9's one-record budget), the running
    statistics as a noise-free channel (white box, q = 1), last-batch membership from the first running mean, and
    the accuracy of the --norm group twin where the profile trains it."""
    input:
        deps(
            "notebooks/audit_batchnorm.ipynb",
            CODE,
            run_inputs([BN_RELEASED] + ([BN_GROUPNORM] if BN_GROUPNORM in RUNS else [])),
        ),
    output:
        *report_outputs(
            [
                f"{RES}/audit_batchnorm.csv",
                f"{RES}/audit_bn_influence.csv",
                f"{FIG}/audit_bn_influence.png",
                f"{FIG}/audit_bn_influence.pdf",
                f"{NB}/audit_batchnorm.ipynb",
            ],
            "audit_batchnorm",
            AUDIT,
            "BatchNorm channel",
            "BatchNorm channel",
        ),
    log:
        f"{NB_LOGS}/audit_batchnorm.log",
    params:
        cmd=papermill("audit_batchnorm", {**config["audit_batchnorm"], "profile": PROFILE.name,
                                          "runs_dir": f"results/runs/{PROFILE.name}",
                                          "released": os.path.relpath(BN_RELEASED, f"results/runs/{PROFILE.name}")[:-5],
                                          "groupnorm": os.path.relpath(BN_GROUPNORM, f"results/runs/{PROFILE.name}")[:-5]}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule audit_paper_model:
    """The audit on the paper's own model at the paper's protocol (workflow.audit.first_layer): the exact final-model
    test on Inception with BatchNorm (a zero record never moves the bias-free first convolution nor the first
    running mean; trials resumed from results/<profile>/audit_first_layer_trials.jsonl, the cpu profile's committed),
    and DP-SGD at the same claim audited with the most powerful every-update statistic (the control with power)."""
    input:
        deps(
            "notebooks/audit_paper_model.ipynb",
            CODE,
        ),
    output:
        *report_outputs(
            [
                f"{RES}/audit_first_layer.csv",
                f"{RES}/audit_control.csv",
                f"{FIG}/audit_paper_model.png",
                f"{FIG}/audit_paper_model.pdf",
                f"{NB}/audit_paper_model.ipynb",
            ],
            "audit_paper_model",
            AUDIT,
            "Paper's model, final model",
            "the exact final-model test on the paper's model and the DP-SGD control",
        ),
    log:
        f"{NB_LOGS}/audit_paper_model.log",
    params:
        cmd=papermill("audit_paper_model", {**config["audit_paper_model"], "profile": PROFILE.name,
                                            "records": f"{RES}/audit_first_layer_trials.jsonl"}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule audit_one_run:
    """The one-run audit (Steinke, Nasr and Jagielski 2023; workflow.audit.one_run) of the profile's runs with canaries
    (audit_one_run: runs; each trained by the train rule with its canaries' scores in its result JSON): the epsilon
    lower bound of the white-box and black-box scores over the profile's grid of guesses, against each run's own
    add/remove claim; DP-SGD on the same canaries is the control."""
    input:
        deps(
            "notebooks/audit_one_run.ipynb",
            CODE,
            run_inputs(sorted(ONE_RUN_RUNS)),
        ),
    output:
        *report_outputs(
            [
                f"{RES}/audit_one_run.csv",
                f"{FIG}/audit_one_run.png",
                f"{FIG}/audit_one_run.pdf",
                f"{NB}/audit_one_run.ipynb",
            ],
            "audit_one_run",
            AUDIT,
            "One-run audit",
            "the one-run audit of real trainings",
        ),
    log:
        f"{NB_LOGS}/audit_one_run.log",
    params:
        cmd=papermill("audit_one_run", {"profile": PROFILE.name, "runs": sorted(ONE_RUN_RUNS),
                                        "ks": (config.get("audit_one_run") or {}).get("ks", [20, 50, 100]),
                                        "confidence": (config.get("audit_one_run") or {}).get("confidence", 0.95)}),
    conda:
        ENV
    shell:
        "{params.cmd}"
