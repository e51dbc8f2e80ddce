"""The index of everything the workflow made for the profile: results/<profile>/README.md (and the top index
results/README.md, which links every profile's index that exists)."""


rule index:
    """results/<profile>/README.md: every object, the command that makes it, ours vs the paper, a status;
    refreshes results/README.md, the top index linking each profile's index. For the profile whose committed
    results the top-level README cites (``readme: true``: the cpu profile), it also rewrites the generated blocks of
    the README and docs/ (python -m workflow readme)."""
    input:
        deps(TABLES, CODE),
    output:
        report_outputs([f"{RES}/README.md"], "index", INDEX, "Index", "every object"),
    log:
        f"{NB_LOGS}/index.log",
    params:
        cmd=f"{PY} -m workflow index --results {RES} --profile {PROFILE.name} --out {RES}/README.md"
        + (f" && {PY} -m workflow readme --profile {PROFILE.name}" if PROFILE.config.get("readme") else ""),
    conda:
        ENV
    shell:
        "({params.cmd}) > {log} 2>&1"
