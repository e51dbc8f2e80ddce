"""The Snakemake DAG: every paper object is a target, missing data is listed after a dry run's plan and stops a
real run before any job (with the data sets that are there as the way on), the SLURM profile resolves, and a
smoke profile runs end to end on MNIST (then reruns nothing, and after losing a run redoes only that run). Every
output of a profile lies in its own folders (results/<profile>/, figures/<profile>/, results/runs/<profile>/,
logs in results/logs/), so the smoke run leaves the committed cpu-profile results byte for byte; a fresh clone
(files written in any order) plans no job. The workflow's layout: the Snakefile includes the rule files of
rules/, every rule has a docstring, and every profile matches config/schema.yaml (a typo'd key stops the DAG,
naming the key and the file); a profile inherits only what it says it `extends:`, and one lacking a key without
it stops the DAG, naming the file and the key."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dirdp import data as dirdp_data
from dirdp import provenance
from workflow import profile_schema
from workflow.experiments import METHODS, OBJECTS, Profile
from workflow.report import OBJECT_NOTEBOOK

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
PROFILES = ("paper", "cpu", "quick", "smoke", "gpu")
RULE_FILES = ("common", "train", "notebooks", "report")


def snakemake(*args, cwd=REPO, data=None, check=True):
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    if data is not None:
        env["DIRDP_DATA"] = str(data)
    proc = subprocess.run([*SNAKEMAKE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def job_counts(output: str) -> dict[str, int]:
    """The 'job  count' table of a dry run."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\S+)\s+(\d+)$", output, flags=re.M)}


# what the workflow reads: copied into a temporary folder, so that no test writes into the repository
WORKFLOW = ("Snakefile", "rules", "config", "notebooks", "dirdp", "workflow", "profiles", "report",
            "environment.yml")  # every rule names environment.yml as its conda env: Snakemake reads it to record metadata
# a profile's results (CSVs, index, executed notebooks) and figures; the cpu profile's are committed
COMMITTED_PROFILE = "cpu"


def copy_workflow(work: Path, *, outputs: bool = False) -> Path:
    """The workflow's sources in ``work`` and, with ``outputs``, the committed outputs as a clone has them:
    results/ (runs' JSONs without their model weights and checkpoints, nor the membership records those weights
    gave: each run stands as a full-width one does in a clone, its weights not there) and figures/."""
    work.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, work / name)
    if outputs:
        shutil.copytree(REPO / "results", work / "results",
                        ignore=shutil.ignore_patterns("*.pt", "*.membership", "*.lock", "*.tmp", "logs", "campaign"))
        shutil.copytree(REPO / "figures", work / "figures")
    return work


def profile_outputs(root: Path, profile: str) -> dict[str, str]:
    """sha256 of every output file of ``profile`` under ``root`` (its results and figures folders, the top index)."""
    files = [p for folder in (root / "results" / profile, root / "figures" / profile) for p in folder.rglob("*")
             if p.is_file()]
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(files)}


@pytest.mark.slow
def test_paper_profile_dry_run_has_every_object_and_every_run(tiny_root):
    # --forceall: the whole DAG, whatever is already on disk (a fresh clone has committed results)
    proc = snakemake("-n", "-q", "rules", "--forceall", "--configfile", "config/paper.yaml", data=tiny_root)
    jobs = job_counts(proc.stdout)
    for name in OBJECTS:
        assert jobs.get(name) == 1, f"no job for {name}"
    for name in ("table6_table7_rstar", "theorem11_kappa_variance", "explore_kappa", "runs_summary", "index",
                 "audit_privacy", "audit_reconstruction", "audit_released_models", "audit_figures"):
        assert jobs.get(name) == 1, f"no job for {name}"
    paper = Profile.load(REPO / "config/paper.yaml")
    # 5 seeds per table cell (Algorithm 1 and the baselines run here), 10 per Figure 2 point
    assert jobs["train"] == len(paper.all_runs()) == 1370


# a sitecustomize that refuses torch and scipy.stats in every Python process started with it on PYTHONPATH
NO_TORCH = """
import sys


class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "torch" or name.startswith("scipy.stats"):
            raise ModuleNotFoundError(f"No module named {name!r} (refused by the test)", name=name)
        return None


sys.meta_path.insert(0, Refuse())
"""


def test_snakemake_plans_the_dag_without_importing_torch(tiny_root, tmp_path):
    """Every Snakemake start (a dry run, a campaign's, each SLURM job's) reads the Snakefile: torch and scipy.stats,
    seconds of imports, stay out of it (the jobs that need them import them)."""
    (tmp_path / "sitecustomize.py").write_text(NO_TORCH)
    env = dict(os.environ, DIRDP_DATA=str(tiny_root), PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO)]))
    check = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True, text=True)
    assert "refused by the test" in check.stderr  # the refusal works
    proc = subprocess.run([*SNAKEMAKE, "-n", "-q", "rules", "--forceall", "--configfile", "config/paper.yaml"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert job_counts(proc.stdout).get("train") == 1370


def data_root_with(root: Path, *names: str) -> Path:
    """A data root holding (empty) files of data sets ``names``: what the DAG's check for missing data looks at."""
    for name in names:
        for rel in dirdp_data.get_spec(name).files:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).touch()
    return root


@pytest.mark.slow
def test_missing_data_a_dry_run_shows_the_plan_and_lists_what_is_missing(tmp_path):
    proc = snakemake("-n", "-q", "rules", "--configfile", "config/paper.yaml", data=tmp_path, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert job_counts(proc.stdout)["train"] == 1370  # the plan
    assert "dirdp: warning: The 'paper' profile needs data sets that are not on disk" in out
    for name in ("cifar10", "svhn", "dermamnist", "mnist", "fashionmnist"):
        assert f"\n{name}: expected" in out
    assert str(tmp_path / "cifar-10-batches-py" / "data_batch_1") in out
    assert f"None of the data sets this profile uses is under the data root {tmp_path}" in out
    assert "datasets=[" not in out and "A real run stops before any job" in out and "Traceback" not in out


@pytest.mark.slow
def test_missing_data_stops_a_real_run_before_any_job(tmp_path):
    work = copy_workflow(tmp_path / "work")
    root = data_root_with(tmp_path / "data", "mnist")
    proc = snakemake("--cores", "1", "--configfile", "config/quick.yaml", cwd=work, data=root, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "dirdp: The 'quick' profile needs data sets that are not on disk: fashionmnist." in out
    assert str(root / "FashionMNIST" / "raw" / "train-images-idx3-ubyte.gz") in out
    assert "run only the data sets that are there: --config 'datasets=[mnist]'" in out  # what is there, not missing
    assert "No job was started" in out and "Traceback" not in out
    assert not (work / "results").exists() and "rule train" not in out and "localrule" not in out


def test_the_missing_data_advice_names_the_data_sets_that_are_there(tmp_path):
    from workflow.missing_data import missing_data, missing_data_message, present_data

    root = data_root_with(tmp_path, "mnist", "fashionmnist")
    for datasets in (None, ["cifar10", "svhn"]):  # the advice is what can run, whatever `datasets` asked for
        prof = Profile.from_config({"profile": "paper", "datasets": datasets})
        missing = missing_data(prof, root)
        assert "mnist" not in missing and "cifar10" in missing
        text = missing_data_message(missing, "paper", present=present_data(prof, root), root=root)
        assert text.endswith("--config 'datasets=[mnist,fashionmnist]'.")
    assert present_data(Profile.from_config({"profile": "smoke", "objects": ["table2_mnist"]}), root) == ["mnist"]


@pytest.mark.parametrize("override", ["datasets=[]", "objects=[]"])
def test_an_empty_list_of_data_sets_or_objects_is_an_error_not_every_one(override, tiny_root):
    key = override.split("=")[0]
    proc = snakemake("-n", "--configfile", "config/smoke.yaml", "--config", override, data=tiny_root, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2
    assert f"--config: {key}: [] is not a non-empty list" in out and f"leave {key} out of --config" in out
    assert "Traceback" not in out and "Building DAG" not in out
    with pytest.raises(ValueError) as err:
        Profile.from_config({"profile": "smoke", key: []})
    assert str(err.value).startswith(f"profile 'smoke': {key}: [] is not a non-empty list of ")
    assert str(err.value).endswith(f"leave {key} out of --config)") and "\n" not in str(err.value)


@pytest.mark.slow
def test_datasets_config_restricts_the_dag(mirror_root):
    proc = snakemake("-n", "-q", "rules", "--forceall", "--configfile", "config/paper.yaml", "--config",
                     "datasets=[mnist]", data=mirror_root)
    assert job_counts(proc.stdout)["train"] == 65  # Table 2: (5 eps + 4 tempered + 4 LATENT) x 5 seeds


@pytest.mark.slow
def test_train_false_aggregates_without_training(tiny_root):
    proc = snakemake("-n", "-q", "rules", "--configfile", "config/cpu.yaml", "--config", "train=false",
                     "--forcerun", "table2_mnist", "index", data=tiny_root)
    jobs = job_counts(proc.stdout)
    assert "train" not in jobs and jobs["table2_mnist"] == 1 and jobs["index"] == 1


@pytest.mark.slow
def test_slurm_profile_dry_run_requests_the_gpu_as_gres(tiny_root):
    proc = snakemake("-n", "--forceall", "--profile", "profiles/slurm", "--config", "datasets=[mnist]", data=tiny_root)
    train_jobs = [block for block in proc.stdout.split("rule ")[1:] if block.startswith("train:")]
    assert len(train_jobs) == 65
    assert all("gres=gpu:1" in b and "gpu=0" in b and "--threads 4" in b for b in train_jobs)


@pytest.mark.slow
def test_smoke_dag_runs_end_to_end_on_mnist(smoke_dag):
    work = smoke_dag.work
    for name in OBJECTS:
        assert (work / "results/smoke" / f"{name}.csv").exists()
    table, prov = provenance.read_csv(work / "results/smoke/table2_mnist.csv")
    assert prov["config"]["profile"] == "smoke"
    here = table[(table.origin == "here") & (table.method == "Algorithm 1")].sort_values("eps")
    assert list(here.eps) == [1.0, float("inf")]
    baselines = table[(table.origin == "here") & (table.method != "Algorithm 1")]
    assert set(baselines.method) == {"Tempered sigmoid DP-SGD", "LATENT"} and (baselines.eps == 1.0).all()
    assert (here["mean"] > 0).all() and (here.n == 1).all()
    assert (here.status == "not_comparable").all()
    assert here.certified_eps.iloc[0] <= 1.0  # r* recomputed for the smoke (q, T)
    cited = table[table.origin == "cited"]
    assert len(cited) > 0 and cited["mean"].isna().all()  # the paper's citations carry nothing of ours
    run = json.loads((work / "results/runs/smoke/mnist/alg1_eps1_seed0.json").read_text())
    assert run["steps"] == 4 and run["provenance"]["config"]["train_subset"] == 1000
    index = (work / "results/smoke/README.md").read_text()
    for obj in OBJECTS.values():
        assert f"results/smoke/{obj.name}.csv" in index
    assert "not run here" in index and "| table6 | [`table6.csv`](table6.csv) |" in index
    # the README's and docs' blocks made from the smoke profile's own files, e.g. the canary audit's table
    assert "### audit-canary\n\nFrom `results/smoke/audit_canary.csv`.\n\n| method (mechanism) |" in index
    # the top index links the committed profiles' indexes: the smoke profile's outputs are git-ignored, and running it
    # leaves results/README.md as committed (a clone's `git status` stays clean)
    top = (work / "results/README.md").read_text()
    assert top == (REPO / "results/README.md").read_text()
    assert "[`results/smoke/README.md`]" not in top and "[`results/cpu/README.md`](cpu/README.md)" in top
    audit_table, _ = provenance.read_csv(work / "results/smoke/audit_canary.csv")
    assert set(audit_table.method) == {"alg1", "dpsgd", "latent"}
    released, _ = provenance.read_csv(work / "results/smoke/audit_released_models.csv")
    assert sorted(released.claimed_eps) == [1.0, 1.0, float("inf")]  # Algorithm 1 at 1 and inf, tempered at 1
    assert released.auc.between(0, 1).all()
    subspace, _ = provenance.read_csv(work / "results/smoke/audit_subspace.csv")
    assert set(zip(subspace.method, subspace.adjacency)) >= {("alg1", "add"), ("alg1", "replace"), ("dpsgd", "add")}
    # no update leaves D's span without the canary (exact); the final-model statistic over T > 1 steps is not exact
    exact = (subspace.method == "alg1") & ((subspace.adversary_sees == "every update") | (subspace["T"] == 1))
    assert exact.any() and (subspace[exact].res0_max < 1e-12).all()
    bn, _ = provenance.read_csv(work / "results/smoke/audit_batchnorm.csv")
    assert (bn.kind == "influence").sum() == 3 and (work / "figures/smoke/audit_bn_influence.png").exists()
    for block, head in (("audit-subspace", "setting"), ("audit-batchnorm", "model")):  # made from the smoke's files
        assert f"### {block}\n\nFrom `results/smoke/{block.replace('-', '_')}.csv`.\n\n| {head} |" in index, block
    # the one-run audit: its run trained with its canaries (each score in its result), audited by its own rule
    canaried = json.loads((work / "results/runs/smoke/mnist/alg1_c20_eps1_seed0.json").read_text())
    assert canaried["one_run"]["theta0_as_trained"] is True and len(canaried["one_run"]["scores"]["white_box"]) == 20
    assert canaried["n_train"] == 1000 + sum(canaried["one_run"]["included"])
    one_run, _ = provenance.read_csv(work / "results/smoke/audit_one_run.csv")
    assert set(zip(one_run.score, one_run.k)) == {(s, k) for s in ("white_box", "black_box") for k in (4, 10)}
    assert one_run.groupby("score").best.sum().eq(1).all() and (one_run.eps_lower_bound >= 0).all()


@pytest.mark.slow
def test_the_smoke_run_leaves_the_committed_profile_outputs_byte_for_byte(smoke_dag):
    work, before = smoke_dag.work, smoke_dag.before
    assert any(f.startswith(f"results/{COMMITTED_PROFILE}/") for f in before)  # the committed results were copied
    assert any(f.startswith(f"figures/{COMMITTED_PROFILE}/") for f in before)
    assert profile_outputs(work, COMMITTED_PROFILE) == before
    assert (work / "results/smoke/table2_mnist.csv").exists() and (work / "figures/smoke/table2_mnist.png").exists()


@pytest.mark.slow
def test_rerun_does_nothing_and_an_interrupted_dag_redoes_only_the_missing_run(smoke_dag):
    work = smoke_dag.work
    again = snakemake("-n", "-q", "rules", "--configfile", "config/smoke.yaml", cwd=work)
    assert "Nothing to be done" in again.stdout + again.stderr
    # what an interrupted DAG leaves: one run unfinished, so nothing downstream of it was made
    for f in ["results/runs/smoke/mnist/alg1_epsinf_seed0.json", "results/smoke/table2_mnist.csv",
              "results/smoke/README.md"]:
        (work / f).unlink()
    redo = job_counts(snakemake("-n", "-q", "rules", "--configfile", "config/smoke.yaml", cwd=work).stdout)
    assert redo["train"] == 1 and redo["table2_mnist"] == 1 and redo["index"] == 1
    assert redo["audit_released_models"] == 1  # it attacks the run's model
    assert redo.get("table6_table7_rstar") is None and redo.get("theorem11_kappa_variance") is None
    assert redo.get("audit_privacy") is None and redo.get("audit_reconstruction") is None  # they train their own


# --- every output of a profile in its own folders; a fresh clone is up to date --------------------------

def job_files(dry_run_output: str) -> dict[str, list[str]]:
    """Every output and log file of every job of a dry run (its 'rule NAME:' blocks), by rule."""
    files: dict[str, list[str]] = {}
    for block in dry_run_output.split("\nrule ")[1:]:
        name = block.split(":", 1)[0]
        for m in re.finditer(r"^\s+(?:output|log): (.*)$", block, flags=re.M):
            files.setdefault(name, []).extend(f.strip() for f in m.group(1).split(","))
    return files


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["cpu", "quick", "smoke"])
def test_every_output_of_a_profile_lies_in_its_own_folders(profile, tiny_root):
    proc = snakemake("-n", "-p", "--forceall", "--configfile", f"config/{profile}.yaml", data=tiny_root)
    files = job_files(proc.stdout)
    assert {*OBJECTS, "index", "table6_table7_rstar", "audit_privacy", "train"} <= set(files)
    own = (f"results/{profile}/", f"figures/{profile}/", f"results/runs/{profile}/", "results/logs/")
    elsewhere = {rule: f for rule, fs in files.items() for f in fs if not f.startswith(own)}
    assert not elsewhere, f"outputs outside the {profile} profile's folders: {elsewhere}"
    assert f"results/{profile}/README.md" in files["index"]
    assert f"results/{profile}/notebooks/table2_mnist.ipynb" in files["table2_mnist"]
    for name in OBJECTS:  # the objects share one notebook, each executed into a copy named as it
        assert f"notebooks/{OBJECT_NOTEBOOK}.ipynb results/{profile}/notebooks/{name}.ipynb " in proc.stdout
    # the notebooks are told to write there
    assert f"-p results_dir results/{profile} -p figures_dir figures/{profile} " in proc.stdout
    assert "-p results_dir results " not in proc.stdout and "-p figures_dir figures " not in proc.stdout
    # a profile whose results are not committed (quick: scripts/main.sh without a GPU) leaves a clone's `git status`
    # clean: git ignores every file its DAG writes
    from workflow.report.index import LOCAL_PROFILES
    if profile in LOCAL_PROFILES and (REPO / ".git").exists():
        every = sorted({f for fs in files.values() for f in fs})
        check = subprocess.run(["git", "check-ignore", "--no-index", "--stdin", "-v", "-n"], cwd=REPO, text=True,
                               input="\n".join(every) + "\n", capture_output=True)
        kept = [line.split("\t", 1)[1] for line in check.stdout.splitlines() if line.startswith("::")]
        assert len(check.stdout.splitlines()) == len(every) and kept == [], kept


@pytest.mark.slow
def test_a_dry_run_lists_the_runs_the_profile_declares_that_it_does_not_train(tmp_path, tiny_root):
    """Where the tables that read a run are on disk, Snakemake plans no train job for the run (a real run neither);
    the dry run then lists every such run, one a line, and the command that trains them, which plans exactly them."""
    work = copy_workflow(tmp_path / "clone", outputs=True)
    gone = "results/runs/cpu/mnist/alg1_eps2_seed0.json"
    (work / gone).unlink()
    runs = Profile.load(REPO / "config/cpu.yaml").every_run()  # the one-run audit's runs too
    missing = sorted(p for p in runs if not (work / p).exists())
    assert gone in missing
    proc = snakemake("-n", "--configfile", "config/cpu.yaml", cwd=work, data=tiny_root)
    assert "Nothing to be done" in proc.stdout + proc.stderr  # what -n plans is what a real run does: nothing
    listed = [line.split("missing: ", 1)[1].split(" (")[0] for line in proc.stderr.splitlines()
              if line.startswith("  missing: ")]
    assert listed == missing, proc.stderr
    assert f"dirdp: {len(missing)} run(s) of the 'cpu' profile have no result" in proc.stderr
    how = next(line for line in proc.stderr.splitlines() if line.startswith("dirdp: to train them: "))
    assert "bash scripts/campaign.sh start" in how
    command = how.split("; or snakemake ", 1)[1].split(" (", 1)[0].split()
    assert command[:4] == ["--cores", "all", "--configfile", "config/cpu.yaml"] and "--forcerun" in command
    forced = snakemake("-n", "-q", "rules", *command, cwd=work, data=tiny_root)
    jobs = job_counts(forced.stdout)
    assert jobs["train"] == len(missing) and jobs["table2_mnist"] == 1 and jobs["index"] == 1
    assert "missing: " not in forced.stderr  # every one is planned now


@pytest.mark.slow
def test_a_fresh_clone_plans_no_job_whatever_the_order_git_wrote_its_files(tmp_path, tiny_root):
    """A clone writes its files in any order, so an output can be older than its notebook or its runs; with the
    rerun triggers of profiles/default (no mtime) the committed results are up to date, while
    `--rerun-triggers mtime ...` still reruns what a newer source makes stale."""
    work = copy_workflow(tmp_path / "clone", outputs=True)
    assert (work / f"results/{COMMITTED_PROFILE}/README.md").exists()
    old = 1_000_000_000  # 2001: every output older than every source and every run
    for folder in (work / "results" / COMMITTED_PROFILE, work / "figures" / COMMITTED_PROFILE):
        for p in folder.rglob("*"):
            os.utime(p, (old, old))
    for folder in ("notebooks", "dirdp", "workflow", "rules", "results/runs"):
        for p in (work / folder).rglob("*"):
            p.touch()
    args = ("-n", "--configfile", f"config/{COMMITTED_PROFILE}.yaml", "--config", "train=false")
    proc = snakemake(*args, cwd=work, data=tiny_root)
    assert "Nothing to be done" in proc.stdout + proc.stderr, proc.stdout
    # forcing a rule still reruns what depends on it (its inputs are not ancient then)
    forced = job_counts(snakemake(*args, "-q", "rules", "-R", "table2_mnist", cwd=work, data=tiny_root).stdout)
    assert forced.get("table2_mnist") == 1 and forced.get("index") == 1 and forced.get("table4_fashionmnist") is None
    mtime = snakemake(*args, "-q", "rules", "--rerun-triggers", "mtime", "params", "input", "software-env", "code",
                      cwd=work, data=tiny_root)
    jobs = job_counts(mtime.stdout)
    assert jobs.get("table2_mnist") == 1 and jobs.get("index") == 1


# --- the layout: rule files by topic, every rule documented ---------------------------------------------

def test_snakefile_includes_every_rule_file_and_defines_only_the_default_target():
    text = (REPO / "Snakefile").read_text()
    included = re.findall(r'^include:\s*"(rules/[^"]+)"', text, flags=re.M)
    assert included == [f"rules/{name}.smk" for name in RULE_FILES]
    assert sorted(included) == sorted(str(p.relative_to(REPO)) for p in (REPO / "rules").glob("*.smk"))
    assert re.findall(r"^rule (\w+)", text, flags=re.M) == ["all"]  # every other rule lives in rules/
    # the merged profile is checked by our own one-line checker, not Snakemake's validate (a schema dump, jsonschema)
    assert "profile_schema.workflow_config(" in text and "snakemake.utils import validate" not in text


@pytest.mark.slow
def test_every_rule_has_a_docstring(tiny_root):
    out = snakemake("--list-rules", data=tiny_root).stdout
    # one rule per unindented line, "name (docstring)"; a docstring's further lines are indented
    rules = dict(re.match(r"(\w+)(?: \((.*))?$", line).groups() for line in out.splitlines()
                 if line and not line[0].isspace())
    expected = {*OBJECTS, "all", "train", "baselines_comparison", "width_effect", "runs_summary", "table6_table7_rstar",
                "theorem11_kappa_variance", "explore_kappa", "audit_privacy", "audit_reconstruction", "audit_figures",
                "audit_released_models", "audit_subspace",
                "audit_batchnorm", "audit_paper_model", "audit_one_run", "precision_validation", "dpsgd_step_cost", "headline",
                "index"}
    assert set(rules) == expected
    assert not [name for name, doc in rules.items() if not doc], "rules without a docstring"
    # and in the sources: every named rule's first statement is a string literal
    for path in [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]:
        for m in re.finditer(r"^(\s*)rule( \w+)?:\n(.*)", path.read_text(), flags=re.M):
            body = m.group(3).strip()
            assert body.startswith('"""'), f"{path.name}: rule{m.group(2)} has no docstring"


# --- profiles validated by config/schema.yaml ----------------------------------------------------------

@pytest.mark.parametrize("name", PROFILES)
def test_committed_profile_matches_the_schema(name):
    from snakemake.utils import validate

    path = REPO / "config" / f"{name}.yaml"
    profile_schema.validate_file(path)  # the file on its own
    validate(yaml.safe_load(path.read_text()), str(REPO / "config/schema.yaml"), set_default=False)
    # what the Snakefile, Profile.load and the campaign read: the file with what it extends
    validate(profile_schema.load(path), str(REPO / "config/schema.yaml"), set_default=False)


def test_the_profile_check_imports_no_jsonschema():
    """Every Snakemake start checks the profile; jsonschema's import alone takes seconds (7-8 s more where
    rfc3987-syntax is installed: it compiles 38 grammars), and the GPU machine has none. The check walks the schema
    itself, and still names a wrong key."""
    code = ("import sys\n"
            "from workflow import profile_schema\n"
            "problems = profile_schema.errors({'profile': 'x', 'traning': {}}, partial=True)\n"
            "print(repr('jsonschema' in sys.modules), problems)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("False [\"(top level): unknown key 'traning' (did you mean 'training'?)"), proc.stdout


@pytest.mark.parametrize("name", PROFILES)
def test_a_committed_profile_reads_as_the_dag_read_it_when_paper_yaml_lay_under_every_profile(name):
    # before `extends:`, the Snakefile merged config/paper.yaml under every profile: the same keys, values and
    # order (the papermill parameters are JSON of them), so the same jobs with the same params
    from snakemake.common.configfile import load_configfile
    from snakemake.utils import update_config

    path = str(REPO / "config" / f"{name}.yaml")
    before = load_configfile(path)  # Snakemake's order: the profile's keys, then paper.yaml's other keys
    update_config(before, load_configfile(str(REPO / "config/paper.yaml")))
    update_config(before, load_configfile(path))
    before.pop("extends", None)
    assert json.dumps(profile_schema.load(path)) == json.dumps(before)


def _without(config: dict, dotted: str) -> dict:
    config = json.loads(json.dumps(config))
    *parents, key = dotted.split(".")
    inner = config
    for p in parents:
        inner = inner[p]
    del inner[key]
    return config


@pytest.mark.parametrize("key", ["training.device", "theorem11", "grids", "datasets"])
def test_a_profile_missing_a_required_key_without_extends_is_an_error_naming_file_and_key(tmp_path, key):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(_without(yaml.safe_load((REPO / "config/smoke.yaml").read_text()), key)))
    from workflow.campaign import plan

    for read in (profile_schema.load, Profile.load, plan.load_profile):
        with pytest.raises(ValueError) as err:
            read(path)
        assert f"{path}: missing key {key!r}: declare it, or add `extends: paper`" in str(err.value)


def test_a_profile_without_device_or_extends_stops_the_dag_before_any_job(tmp_path, tiny_root):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(_without(yaml.safe_load((REPO / "config/smoke.yaml").read_text()),
                                            "training.device")))
    proc = snakemake("-n", "--configfile", str(path), data=tiny_root, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2
    assert f"{path}: missing key 'training.device': declare it, or add `extends: paper`" in out
    assert "Traceback" not in out and "Building DAG" not in out


@pytest.mark.slow
def test_a_profile_that_extends_paper_takes_each_key_it_leaves_out_everywhere_alike(tmp_path, tiny_root):
    path = tmp_path / "mine.yaml"
    path.write_text("profile: mine\nextends: paper\nobjects: [table2_mnist]\ndatasets: [mnist]\n"
                    "training: {seeds: 1, width: 0.25, device: cpu}\ngrids: {table2_mnist: {eps: [1], baselines: {}}}\n")
    paper = yaml.safe_load((REPO / "config/paper.yaml").read_text())
    config = profile_schema.load(path)
    assert "extends" not in config and config["theorem11"] == paper["theorem11"] and config["audit"] == paper["audit"]
    assert config["training"] == {"seeds": 1, "width": 0.25, "device": "cpu", "threads": 4, "eval_every": 1000}
    from workflow.campaign import plan

    assert Profile.load(path).training == plan.load_profile(path).training == config["training"]
    proc = snakemake("results/runs/mine/mnist/alg1_eps1_seed0.json", "-n", "-p", "--cores", "4", "--configfile",
                     str(path), data=tiny_root)
    assert "--width 0.25 --device cpu --eval-every 1000 --threads 4" in proc.stdout


def test_extends_names_a_profile_of_config_and_only_a_profile_file_says_it(tmp_path, tiny_root):
    path = tmp_path / "mine.yaml"
    path.write_text("profile: mine\nextends: papr\n")
    with pytest.raises(ValueError, match=f"{path}: extends: there is no config/papr.yaml; .*: cpu, gpu, paper"):
        profile_schema.load(path)
    proc = snakemake("-n", "--configfile", "config/smoke.yaml", "--config", "extends=paper", data=tiny_root,
                     check=False)
    assert proc.returncode == 2 and "--config: extends: a profile file says what it extends" in proc.stderr


def test_every_profile_file_is_one_of_the_committed_profiles():
    assert sorted(p.stem for p in (REPO / "config").glob("*.yaml") if p.stem != "schema") == sorted(PROFILES)


def test_schema_names_every_paper_object_data_set_and_method():
    defs = profile_schema.schema()["$defs"]
    assert defs["object_name"]["enum"] == list(OBJECTS)
    assert defs["dataset_name"]["enum"] == list(dirdp_data.SPECS)
    assert defs["method"]["enum"] == list(METHODS)
    assert defs["grid"]["properties"]["baselines"]["propertyNames"]["enum"] == [m for m in METHODS if m != "alg1"]


@pytest.mark.parametrize("mutate, key", [
    (lambda c: c["training"].update(widht=0.5), "widht"),
    (lambda c: c.update(dataset=["mnist"]), "dataset"),
    (lambda c: c["grids"].update(table2_mnsit={"eps": [1]}), "table2_mnsit"),
    (lambda c: c["grids"]["table2_mnist"]["baselines"].update(dpsdg=[1]), "dpsdg"),
    (lambda c: c["grids"]["table2_mnist"].update(extra=[{"eps": 1, "seed": [1]}]), "seed"),
    (lambda c: c["audit"]["canary"].update(trails=10), "trails"),
    (lambda c: c.update(campaign={"queue": [{"datset": "mnist"}]}), "datset"),
    (lambda c: c["training"].update(device="gpu"), "gpu"),
])
def test_a_typo_in_a_profile_is_an_error_naming_the_key_and_the_file(tmp_path, mutate, key):
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    mutate(config)
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ValueError) as err:
        profile_schema.validate_file(path)
    assert f"{path}: " in str(err.value) and repr(key) in str(err.value)


def test_a_typo_in_a_profile_stops_the_dag_before_any_job(tmp_path, tiny_root):
    config = yaml.safe_load((REPO / "config/smoke.yaml").read_text())
    config["training"]["widht"] = 0.5
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = snakemake("-n", "--configfile", str(path), data=tiny_root, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f"{path}: training: unknown key 'widht' (did you mean 'width'?)" in out
    assert "Traceback" not in out and "Building DAG" not in out and "Job stats" not in out


def test_a_typo_in_config_overrides_stops_the_dag_naming_the_key(tiny_root):
    proc = snakemake("-n", "--configfile", "config/smoke.yaml", "--config", "dataset=[mnist]", data=tiny_root,
                     check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "--config: (top level): unknown key 'dataset' (did you mean 'datasets'?)" in out
    assert "Traceback" not in out and "Building DAG" not in out
