"""The privacy audit: attacks on Algorithm 1 and the baselines (dirdp.audit), and membership inference
on the models this profile released."""


rule audit_privacy:
    """The privacy audit (dirdp.audit): reconstruction of private images from one update (analytic on a
    dense first layer, gradient inversion on conv models), canary epsilon lower bounds for Algorithm 1,
    DP-SGD and LATENT at the same claimed eps, and membership inference at matched claimed eps."""
    input:
        deps(
            "notebooks/audit_privacy.ipynb",
            sources("dirdp/audit.py", "dirdp/mechanism.py", "dirdp/accountant.py", "dirdp/baselines/dpsgd.py",
                    "dirdp/baselines/latent.py"),
        ),
    output:
        f"{RES}/audit_canary.csv",
        f"{RES}/audit_reconstruction.csv",
        f"{RES}/audit_membership.csv",
        f"{FIG}/audit_reconstruction.png",
        f"{FIG}/audit_eps_claimed_vs_lower_bound.png",
        f"{FIG}/audit_eps_claimed_vs_lower_bound.pdf",
        f"{NB}/audit_privacy.ipynb",
    log:
        f"{NB_LOGS}/audit_privacy.log",
    params:
        cmd=papermill("audit_privacy", {**config["audit"], "profile": PROFILE.name}),
    shell:
        "{params.cmd}"


rule audit_released_models:
    """Membership inference (loss threshold) on every image model this profile released."""
    input:
        deps(
            "notebooks/audit_released_models.ipynb",
            sources("dirdp/audit.py"),
            run_inputs(sorted(p for p, run in RUNS.items() if run.method != "latent")),
        ),
    output:
        f"{RES}/audit_released_models.csv",
        f"{NB}/audit_released_models.ipynb",
    log:
        f"{NB_LOGS}/audit_released_models.log",
    params:
        cmd=papermill("audit_released_models", {"profile": PROFILE.name, "runs_dir": f"results/runs/{PROFILE.name}",
                                                "n": 2000}),
    shell:
        "{params.cmd}"
