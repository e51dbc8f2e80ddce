"""Shared by every file of rules/: the profile (config/<name>.yaml with what it `extends:`, already validated
against config/schema.yaml by the Snakefile), its output folders, its training runs, the data sets it lacks (a
real run stops before any job; a dry run lists them), the papermill command of a notebook and the inputs of a job
(deps: what triggers a rerun). Defines no rule."""

import atexit
import glob
import json
import mimetypes
import os
import sys
from pathlib import Path
from typing import NamedTuple

from snakemake.settings.enums import RerunTrigger
from snakemake.settings.types import DeploymentMethod

from dirdp import methods
from workflow import paper
from workflow.experiments import OBJECTS, Profile, Run
from workflow.missing_data import missing_data, missing_data_message, present_data
from workflow.report import OBJECT_NOTEBOOK, labels, profile_run_paths


def sources(*folders):
    """Every source file under ``folders``: its Python modules and the data files they read (.csv)."""
    return sorted(str(p) for folder in folders for p in Path(folder).rglob("*")
                  if p.suffix in (".py", ".csv") and "__pycache__" not in p.parts)


# The interpreter of every job: the one running Snakemake (the venv of scripts/setup.sh, or the conda env of
# environment.yml activated by hand); with --software-deployment-method conda, the `python` of the env that each
# rule's `conda:` directive (environment.yml) has Snakemake build and activate for the job.
PY = "python" if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method else sys.executable
# what every rule declares as its software (snakemake --lint asks for one; path relative to rules/)
ENV = "../environment.yml"
# The code every notebook job runs: the library (dirdp/) and the workflow (workflow/), each file an input of each job
# (with mtime as a rerun trigger, an edit anywhere reruns every notebook; without it, name the rule: -R RULE)
CODE = sources("dirdp", "workflow")

PROFILE = Profile.from_config(config)
# Every output of a profile lives in its own folders, so that running one profile (scripts/main.sh runs quick on a
# machine without a GPU) never overwrites another's committed evidence: its CSVs and index in results/<profile>/,
# its executed notebooks in results/<profile>/notebooks/, its figures in figures/<profile>/, its notebook logs in
# results/logs/<profile>/; its training runs in results/runs/<profile>/ (logs: results/logs/runs/<profile>/).
RES = f"results/{PROFILE.name}"
FIG = f"figures/{PROFILE.name}"
NB = f"{RES}/notebooks"
LOGS = "results/logs"
NB_LOGS = f"{LOGS}/{PROFILE.name}"
RUNS = PROFILE.all_runs()  # result path -> Run: the paper objects' runs
ONE_RUN_RUNS = PROFILE.one_run_runs()  # the one-run audit's runs (with canaries): trained alike, read by its rule alone
TRAIN_RUNS = {**RUNS, **ONE_RUN_RUNS}  # what the train rule makes
# the order the profile trains its runs in (its `campaign: queue`, then every other run seed by seed): each train job's
# Snakemake priority, the first run's the highest, so that any command training several (the DAG, a campaign) starts
# them in that order
_QUEUE = PROFILE.campaign_queue()
PRIORITY = {run.path(PROFILE.name): len(_QUEUE) - i for i, run in enumerate(_QUEUE)}
# --config train=false: aggregate the runs already on disk, schedule no training (missing runs show
# as "not run here (result file missing)")
TRAIN = str(config.get("train", True)).lower() not in ("false", "0", "no")


# File modification times as a rerun trigger: only where `--rerun-triggers` names mtime. profiles/default/config.yaml
# (loaded on its own) leaves it out, because a fresh clone writes its files in any order. Snakemake 9 compares an
# input's mtime with its job's outputs whatever --rerun-triggers says, so without mtime an input is flagged
# ancient(): its time stamp is ignored. A missing output, or a missing input the DAG makes, still reruns a job.
# Snakemake does not carry a rerun across an ancient input that exists, so an input stays plain where the rule
# making it, or one upstream of that rule, is forced by this command (-R/--forcerun RULE): forcing a rule still
# reruns everything downstream of it (a table after its runs, the index after a table).
def deps(*items):
    """The inputs of a job (paths or lists of paths), as an input function: each ``ancient()`` unless mtime is a
    rerun trigger or the rules making it are forced (read when the DAG is built: the settings are not known yet
    while the rules are parsed)."""
    paths = [p for item in items for p in ([item] if isinstance(item, str) else item)]

    def inputs(wildcards):
        if RerunTrigger.MTIME in workflow.rerun_triggers:
            return paths
        return [p if _made_by_forced_rule(p) else ancient(p) for p in paths]

    inputs.paths = paths  # what _rule_inputs reads, to follow the DAG upstream without building it
    return inputs


_AFFECTED = {}  # rule name -> forced, or downstream of a forced rule


def _producers(path):
    return [r for r in workflow.rules if r.name != "all" and r.is_producer(path)]


def _rule_inputs(rule):
    return [p for item in rule.input for p in (getattr(item, "paths", None) or ([item] if isinstance(item, str) else []))]


def _forced(rule):
    if rule.name not in _AFFECTED:
        _AFFECTED[rule.name] = False  # no cycles in a DAG; this only stops a recursion
        names = {r.name for r in workflow.rules}
        forcerun = set(workflow.dag_settings.forcerun or ())
        _AFFECTED[rule.name] = (rule.name in forcerun
                                or any(rule.is_producer(f) for f in forcerun - names)
                                or any(_forced(r) for p in _rule_inputs(rule) for r in _producers(p)))
    return _AFFECTED[rule.name]


def _made_by_forced_rule(path):
    return bool(workflow.dag_settings.forcerun) and any(_forced(r) for r in _producers(path))


def run_inputs(paths):
    """``paths`` that a notebook job depends on: all of them, or with train=false those on disk."""
    return [p for p in paths if TRAIN or os.path.exists(p)]


TRAINING = PROFILE.training
ON_GPU = str(TRAINING.get("device", "cpu")).startswith("cuda")
PROFILE_PARAM = {k: config.get(k) for k in ("profile", "objects", "datasets", "training", "grids", "also_show")}

# Data sets the profile trains on that are not on disk. Whether this is a dry run is known only once Snakemake
# executes the DAG (workflow.dryrun), not while it reads the rules: a real run stops in onstart (after the DAG is
# built, before the first job; --touch runs nothing and goes on), a dry run (-n) shows its plan, then lists them.
_DATA_ROOT = config.get("data_root")
_missing = missing_data(PROFILE, _DATA_ROOT) if RUNS and TRAIN else {}
MISSING_DATA = (missing_data_message(_missing, PROFILE.name, present=present_data(PROFILE, _DATA_ROOT), root=_DATA_ROOT)
                if _missing else None)


@atexit.register
def _missing_data_after_a_dry_run():
    if MISSING_DATA and workflow.dryrun:
        print(f"dirdp: warning: {MISSING_DATA}\nA real run stops before any job while they are missing.",
              file=sys.stderr)


# Runs the profile declares that have no result, and that this command does not train. Snakemake plans a train job
# only where something downstream of the run needs making (a missing table, a forced rule): where the tables that read
# a run are on disk (made while the run was missing, which they show as a missing cell), "Nothing to be done" holds
# for a dry run and a real run alike, and the run stays untrained. Both then list those runs (stderr), one a line, with
# the commands that train them; nothing is trained without asking, and what -n plans is what a real run does.
def untrained_runs(dag):
    """result path -> the rules (but all) of the jobs that read it, for every run of the profile in ``dag`` whose
    result is not on disk and whose train job is not planned."""
    out = {}
    for job in dag.jobs:
        if job.rule.name == "train" and not dag.needrun(job) and not os.path.exists(job.output[0]):
            out[str(job.output[0])] = sorted({j.rule.name for j in dag.depending[job] if j.rule.name != "all"})
    return dict(sorted(out.items()))


def untrained_runs_message(untrained, profile, configfiles):
    """The lines that list ``untrained`` (:func:`untrained_runs`) and say how to train them: the campaign (one profile
    file), or Snakemake forcing the rules that read them, which plans their train jobs and rebuilds everything
    downstream of those rules (their tables, figures and the index)."""
    files = [os.path.relpath(f) if os.path.isabs(f) else str(f) for f in configfiles]
    readers = sorted({rule for rules in untrained.values() for rule in rules})
    lines = [f"dirdp: {len(untrained)} run(s) of the '{profile}' profile have no result and are not trained by this "
             "command (the tables on disk were made without them and show them as missing):"]
    lines += [f"  missing: {path}" + (" (its checkpoint is there: training resumes from it)"
                                      if os.path.exists(f"{path}.ckpt.pt") else "") for path in untrained]
    ways = []
    if len(files) == 1:
        ways.append(("" if files[0] == "config/cpu.yaml" else f"CONFIG={files[0]} ") + "bash scripts/campaign.sh start"
                    " (in the background, in the profile's order)")
    ways.append("snakemake --cores all " + " ".join(f"--configfile {f}" for f in files)
                + f" --forcerun {' '.join(readers)} (trains them here, then rebuilds what reads them; -n shows the plan)")
    return "\n".join(lines + ["dirdp: to train them: " + "; or ".join(ways)])


@atexit.register
def _untrained_runs_after_planning():
    from snakemake_interface_executor_plugins.settings import ExecMode

    dag = workflow.dag
    if dag is None or workflow.scheduler is None or workflow.exec_mode != ExecMode.DEFAULT:
        return  # no plan was made (--list-rules, a lint, a report) or this is a job of a cluster
    untrained = untrained_runs(dag)
    if untrained:
        print(untrained_runs_message(untrained, PROFILE.name, workflow.config_settings.configfiles), file=sys.stderr)


onstart:
    if MISSING_DATA and not workflow.touch:
        print(f"dirdp: {MISSING_DATA}\nNo job was started (snakemake -n shows the plan).", file=sys.stderr)
        sys.exit(2)


def papermill(name, params, *, out=None):
    """Shell command running notebooks/<name>.ipynb with papermill, parameters given as JSON, into
    results/<profile>/notebooks/<out>.ipynb (log: results/logs/<profile>/<out>.log; ``out`` defaults to ``name``)."""
    return (f"{PY} -m papermill --no-progress-bar notebooks/{name}.ipynb {NB}/{out or name}.ipynb "
            f"-p results_dir {RES} -p figures_dir {FIG} -y '{json.dumps(params)}' > {NB_LOGS}/{out or name}.log 2>&1")


# The BatchNorm audit reads the profile's released MNIST eps = 1 model (seed 0) and its --norm group twin where the
# profile trains one: it runs where the profile trains the first.
# (fp32 where the profile trains that cell in fp32, else its bf16 run: the quick profile trains in bf16).
BN_RELEASED, BN_GROUPNORM = (
    next((p for p in paths if p in RUNS), paths[0])
    for paths in ([Run("mnist", 1.0, 0, norm=n, precision=pr).path(PROFILE.name) for pr in (None, "bf16")]
                  for n in (None, "group")))
# The DP-SGD step cost is drawn where the profile has a DP-SGD step bench (results/<profile>/bench_dpsgd*.json).
DPSGD_BENCHES = sorted(str(p) for p in Path(RES).glob("bench_dpsgd*.json"))


# `snakemake --report results/<profile>/report.html`: Snakemake's self-contained HTML report of the outputs flagged
# report() here, the tables (CSV), figures (PNG; the PDFs are the same figures), executed notebooks and the index,
# each with the caption report/captions/<caption>.rst of the rule that makes it, in a category by part of the paper
# (report/workflow.rst is its front page). Only a file on disk when the workflow is read is flagged: Snakemake's
# report stops at a flagged file that does not exist, so a profile's report shows what it has made and its index
# (results/<profile>/README.md, in the report) says what is missing. Flags change no job: what runs, and when, is
# the same with and without them.
ACCURACY = "1. Accuracy: the paper's tables and figures (Section 4, appendices)"
THEORY = "2. Privacy accounting and theory"
BEYOND = "3. Beyond the paper: baselines, width, every run"
AUDIT = "4. Privacy audit"
INDEX = "5. Index"
DATASET_NAMES = labels.DATASETS  # the report's subcategory of each data set
_REPORTED_KINDS = {".csv": "table", ".png": "figure", ".ipynb": "executed notebook", ".md": "index"}
mimetypes.add_type("application/x-ipynb+json", ".ipynb")  # the report offers an executed notebook as a download


def report_outputs(paths, caption, category, subcategory, about):
    """``paths`` (the outputs of one rule, in their order), each table, figure, executed notebook or index among
    them that is on disk flagged for the report with caption report/captions/<caption>.rst, in ``category`` /
    ``subcategory``, labelled with what it is ``about`` (e.g. "Table 2"), its kind and its file name."""
    out = []
    for path in paths:
        kind = _REPORTED_KINDS.get(os.path.splitext(path)[1])
        if kind and os.path.exists(path):
            path = report(path, caption=f"../report/captions/{caption}.rst", category=category,
                          subcategory=subcategory, labels={"about": about, "kind": kind, "file": os.path.basename(path)})
        out.append(path)
    return out


# A notebook job as rules/notebooks.smk declares it (NOTEBOOKS), and the helpers of its declaration.
class Notebook(NamedTuple):
    doc: str  # what the job makes (the rule's docstring)
    files: list  # its outputs (made())
    in_report: tuple  # (category, subcategory, what the files are about) in `snakemake --report`
    reads: list = []  # its inputs besides its notebook and CODE: runs (run_inputs) and other jobs' tables
    params: dict = {}  # papermill's parameters
    notebook: str = ""  # notebooks/<notebook>.ipynb; default: the job's name
    made: bool = True  # whether this profile makes it (a target of `rule all` and an input of the index)


def made(name, *files):
    """The outputs of job ``name``: each of ``files`` in its folder ("X.csv" or "X.jsonl" a table, "X.png" a figure
    alone, a bare stem a figure as PNG and PDF), then its executed notebook."""
    out = []
    for f in files:
        stem, ext = os.path.splitext(f)
        out += ([f"{RES}/{f}"] if ext in (".csv", ".jsonl") else [f"{FIG}/{f}"] if ext else
                [f"{FIG}/{f}.png", f"{FIG}/{f}.pdf"])
    return out + [f"{NB}/{name}.ipynb"]


def subset(params, *keys):
    """The entries ``keys`` of a profile's section ``params`` (one section feeding several notebooks)."""
    return {k: params[k] for k in keys}


def object_runs(*names):
    """The runs of the paper objects ``names`` that a job reads (run_inputs: with train=false, those on disk)."""
    return run_inputs([p for o in names for p in profile_run_paths(OBJECTS[o], PROFILE)])


def draws(obj):
    """Whether paper object ``obj`` has a figure in this profile: a run here, or a value the paper prints for it
    (workflow.report.plots.figure draws nothing else; Figure 2, whose values the paper does not print, has none
    where it is not run)."""
    return bool(profile_run_paths(obj, PROFILE)) or len(paper.accuracy(obj.paper_object or obj.name)) > 0
