"""Shared by every rule file: the profile (config/<name>.yaml with what it `extends:`, already validated
against config/schema.yaml by the Snakefile), its output folders, its training runs, the data sets it lacks (a
real run stops before any job; a dry run lists them), the papermill command of a notebook, the inputs of a job
(deps: what triggers a rerun) and the targets of `rule all`. Defines no rule."""

import atexit
import glob
import json
import os
import sys

from snakemake.settings.enums import RerunTrigger

from dirdp.experiments import OBJECTS, Profile, Run, missing_data_message
from dirdp.report import profile_run_paths


def sources(*paths):
    """The source files a rule depends on: each ``dirdp/<module>.py`` as named, or, where that module is
    a package (``dirdp/<module>/__init__.py``, which Python imports in its place), every .py file of it."""
    out = []
    for path in paths:
        package = path[:-len(".py")] if path.endswith(".py") else None
        if package and os.path.exists(os.path.join(package, "__init__.py")):
            out += sorted(glob.glob(os.path.join(package, "**", "*.py"), recursive=True))
        else:
            out.append(path)
    return out


PY = sys.executable
CORE = sources("dirdp/accountant.py", "dirdp/mechanism.py", "dirdp/theory.py", "dirdp/presets.py", "dirdp/paper.py",
               "dirdp/report/tables.py", "dirdp/provenance.py")
REPORT = sources("dirdp/report/__init__.py", "dirdp/report/runs.py", "dirdp/report/compare.py", "dirdp/report/objects.py",
                 "dirdp/report/plots.py", "dirdp/protocol.py", "dirdp/theory.py", "dirdp/experiments.py", "dirdp/paper.py",
                 "dirdp/paper_accuracy.csv")

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
RUNS = PROFILE.all_runs()  # result path -> Run
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
    rerun trigger or the rule that makes it is forced (read when the DAG is built: the settings are not known yet
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
_missing = PROFILE.missing_data(_DATA_ROOT) if RUNS and TRAIN else {}
MISSING_DATA = (missing_data_message(_missing, PROFILE.name, present=PROFILE.present_data(_DATA_ROOT), root=_DATA_ROOT)
                if _missing else None)


@atexit.register
def _missing_data_after_a_dry_run():
    if MISSING_DATA and workflow.dryrun:
        print(f"dirdp: warning: {MISSING_DATA}\nA real run stops before any job while they are missing.",
              file=sys.stderr)


onstart:
    if MISSING_DATA and not workflow.touch:
        print(f"dirdp: {MISSING_DATA}\nNo job was started (snakemake -n shows the plan).", file=sys.stderr)
        sys.exit(2)


def papermill(name, params, *, out=None):
    """Shell command running notebooks/<name>.ipynb with papermill, parameters given as JSON."""
    return (f"{PY} -m papermill --no-progress-bar notebooks/{name}.ipynb {NB}/{out or name}.ipynb "
            f"-p results_dir {RES} -p figures_dir {FIG} -y '{json.dumps(params)}' > {NB_LOGS}/{out or name}.log 2>&1")


def object_outputs(name):
    """What the notebook of paper object ``name`` writes: its table, figure (png, pdf) and executed copy."""
    obj = OBJECTS[name]
    stem = obj.figures[0] if obj.figures else name
    return [f"{RES}/{name}.csv", f"{FIG}/{stem}.png", f"{FIG}/{stem}.pdf", f"{NB}/{name}.ipynb"]


OBJECT_TARGETS = [f for name in OBJECTS for f in object_outputs(name)]
FIXED_TARGETS = [f"{RES}/table6.csv", f"{RES}/table7.csv", f"{FIG}/h_of_r.pdf", f"{RES}/theorem11_mc.csv",
                 f"{FIG}/theorem11_kappa_variance.pdf", f"{NB}/explore_kappa.ipynb", f"{RES}/runs_summary.csv",
                 f"{FIG}/runs_accuracy_curves.pdf", f"{RES}/baselines_comparison.csv", f"{RES}/audit_canary.csv",
                 f"{RES}/audit_released_models.csv", f"{RES}/width_effect.csv", f"{FIG}/width_effect.pdf",
                 f"{RES}/audit_subspace.csv", f"{FIG}/audit_subspace_residuals.pdf"]
# The BatchNorm audit reads the profile's released MNIST eps = 1 model (seed 0) and its --norm group twin where the
# profile trains one: it runs where the profile trains the first.
BN_RELEASED = Run("mnist", 1.0, 0).path(PROFILE.name)
BN_GROUPNORM = Run("mnist", 1.0, 0, norm="group").path(PROFILE.name)
BN_TARGETS = [f"{RES}/audit_batchnorm.csv", f"{FIG}/audit_bn_influence.pdf"] if BN_RELEASED in RUNS else []
FIXED_TARGETS += BN_TARGETS
