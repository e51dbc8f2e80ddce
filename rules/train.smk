"""Training: one job per run of the profile (workflow.experiments.Profile.every_run), each at the priority of its place
in the profile's order (PRIORITY, rules/common.smk)."""


rule train:
    """One training run of the profile (Algorithm 1 or a baseline): result JSON with provenance,
    model weights beside it; resumes from <json>.ckpt.pt when a previous attempt was interrupted (SIGTERM or SIGINT:
    the run writes its checkpoint and exits 75).
    The command names the interpreter as {PY}, which snakemake --lint reports ("uses variable PY from outside of the
    rule"): the one lint left, on purpose. The command's text is the rule's code record, and with the code rerun
    trigger a changed text would retrain every finished run that .snakemake/ records; params.py instead would make the
    interpreter's path a params trigger as well (tests/test_report.py allows exactly this lint)."""
    output:
        "results/runs/{profile}/{dataset}/{tag}.json",
    log:
        f"{LOGS}/runs/{{profile}}/{{dataset}}/{{tag}}.log",
    wildcard_constraints:
        profile=PROFILE.name,
        tag=r"[A-Za-z0-9_.\-]+",
    threads: lambda wc: PROFILE.threads(TRAIN_RUNS[f"results/runs/{wc.profile}/{wc.dataset}/{wc.tag}.json"])
    priority: lambda wc: PRIORITY[f"results/runs/{wc.profile}/{wc.dataset}/{wc.tag}.json"]
    resources:
        gpu=1 if ON_GPU else 0,
    params:
        args=lambda wc, output: " ".join(PROFILE.train_args(TRAIN_RUNS[output[0]])),
    conda:
        ENV
    shell:
        "{PY} -m dirdp train {params.args} --threads {threads} --out {output} > {log} 2>&1"
