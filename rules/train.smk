"""Training: one job per run of the profile (dirdp.experiments.Profile.all_runs)."""


rule train:
    """One training run of the profile (Algorithm 1 or a baseline): result JSON with provenance,
    model weights beside it; resumes from <json>.ckpt.pt when a previous attempt was interrupted."""
    output:
        "results/runs/{profile}/{dataset}/{tag}.json",
    log:
        f"{LOGS}/runs/{{profile}}/{{dataset}}/{{tag}}.log",
    wildcard_constraints:
        profile=PROFILE.name,
        tag=r"[A-Za-z0-9_.\-]+",
    threads: int(TRAINING.get("threads", 1))
    resources:
        gpu=1 if ON_GPU else 0,
    params:
        args=lambda wc, output: " ".join(PROFILE.train_args(RUNS[output[0]])),
    shell:
        "{PY} -m dirdp train {params.args} --threads {threads} --out {output} > {log} 2>&1"
