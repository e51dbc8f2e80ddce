"""dirdp: every table and figure of Rao et al. (2026) that this artifact regenerates.

    snakemake --cores all --resources gpu=1                                   # paper with a CUDA GPU, else quick
    snakemake --cores all --resources gpu=1 --configfile config/paper.yaml    # paper profile (GPU), whatever is here
    snakemake --cores all --resources gpu=1 --configfile config/quick.yaml    # CPU-only machine, minutes
    snakemake --cores all --configfile config/cpu.yaml                        # paper protocol, reduced width
    snakemake --profile profiles/slurm                                        # paper profile on a SLURM cluster
    snakemake --list-rules                                                    # every rule, with what it makes
    snakemake --report results/cpu/report.html --configfile config/cpu.yaml   # browse a profile's results (HTML)

Each training run is one job (``python -m dirdp train``) writing results/runs/<profile>/<dataset>/<tag>.json;
rerunning after an interruption redoes only missing runs, and a half-finished run resumes from its
checkpoint. Each table or figure is one job of a parameterized notebook (the paper's tables and figures made of runs
share notebooks/accuracy_vs_eps.ipynb), executed by papermill into results/<profile>/notebooks/<object>.ipynb
(log in results/logs/<profile>/), writing results/<profile>/<object>.csv and figures/<profile>/<stem>.{png,pdf};
results/<profile>/README.md indexes them all, and results/README.md links
the index of every profile made here. A profile writes only into its own folders, so running one never
overwrites another's results. ``--config 'datasets=[mnist,fashionmnist]'`` restricts the DAG;
``--config train=false`` rebuilds every table from the runs already on disk and trains nothing.

What triggers a rerun (profiles/default/config.yaml, loaded automatically): a missing output, an input the
DAG makes anew, a forced rule (-R RULE: it and everything downstream of it) and, where .snakemake/ holds the
records of an earlier run here, changed params, code or set of inputs; NOT file modification times, which a
fresh clone scrambles. So after editing a notebook or a dirdp source, rerun what depends on it by name
(``-R RULE``); ``--rerun-triggers mtime params input software-env code`` restores time stamps as a trigger.

A profile (config/<name>.yaml) declares every key config/schema.yaml requires, or says ``extends: <name>`` to
take each key it leaves out from config/<name>.yaml (config/gpu.yaml: ``extends: paper``); a required key that
is missing, or a key the schema does not know (a typo), stops the workflow before any job, naming the key and
the file. Without --configfile the profile is config/paper.yaml where torch sees a CUDA GPU, else config/quick.yaml
(one line on stderr says which). Where data sets the profile trains on are not
on disk, a dry run (-n) shows the plan and lists them; a real run stops before any job, listing them. The rules
live in rules/, by topic:

    rules/common.smk     the profile, its runs, the notebook command (no rules)
    rules/train.smk      train: one training run
    rules/notebooks.smk  every table and figure: one notebook job each, declared once (NOTEBOOKS)
    rules/report.smk     index: results/<profile>/README.md (and the top index results/README.md)
"""

import sys
from pathlib import Path

from workflow import profile_schema, snakemake_args

# The profile: each --configfile with what it `extends:`, a later one over an earlier one, then the --config
# overrides; every file and the overrides checked on their own (an error names its file and key), then the whole,
# against config/schema.yaml (profile_schema.workflow_config: one line a problem, exit 2). No `configfile:`
# directive: Snakemake would merge that file under every profile, so that a key a profile leaves out would be its
# without the profile saying so.
# Without --configfile: config/paper.yaml where torch sees a CUDA GPU, else config/quick.yaml (a CPU, minutes, not the
# paper profile's weeks), said in one line on stderr. The choice joins the command line's config files, which
# Snakemake passes on to the jobs it starts elsewhere (a cluster node, with or without a GPU, runs the same profile).
_configfiles = list(workflow.configfiles)
if not _configfiles:
    _default, _said = snakemake_args.default_profile()
    print(_said, file=sys.stderr)
    _configfiles = [_default]
    workflow.config_settings.configfiles.append(Path(_default).absolute())
try:
    _config = profile_schema.workflow_config(_configfiles, dict(workflow.config_settings.config))
except ValueError as _err:
    print(f"dirdp: {_err}", file=sys.stderr)
    sys.exit(2)
config.clear()
config.update(_config)


include: "rules/common.smk"


# the front page of `snakemake --report results/<profile>/report.html` (rules/common.smk: what the report holds)
report: "report/workflow.rst"


include: "rules/train.smk"
include: "rules/notebooks.smk"
include: "rules/report.smk"


rule all:
    """Every table, figure and executed notebook the profile makes (rules/notebooks.smk), and the index."""
    default_target: True
    input:
        NOTEBOOK_TARGETS,
        f"{RES}/README.md",
