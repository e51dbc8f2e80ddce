"""The Snakemake DAG: every paper object is a target, missing data stops it with one message, the
SLURM profile resolves, and a smoke profile runs end to end on MNIST (then reruns nothing, and after
losing a run redoes only that run)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dirdp import provenance
from dirdp.experiments import OBJECTS, Profile

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


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


def test_paper_profile_dry_run_has_every_object_and_every_run(tiny_root):
    # --forceall: the whole DAG, whatever is already on disk (a fresh clone has committed results)
    proc = snakemake("-n", "-q", "rules", "--forceall", "--configfile", "config/paper.yaml", data=tiny_root)
    jobs = job_counts(proc.stdout)
    for name in OBJECTS:
        assert jobs.get(name) == 1, f"no job for {name}"
    for name in ("table6_table7_rstar", "theorem11_kappa_variance", "explore_kappa", "runs_summary", "index",
                 "audit_privacy", "audit_released_models"):
        assert jobs.get(name) == 1, f"no job for {name}"
    paper = Profile.load(REPO / "config/paper.yaml")
    # 5 seeds per table cell (Algorithm 1 and the baselines run here), 10 per Figure 2 point
    assert jobs["train"] == len(paper.all_runs()) == 1370


def test_missing_data_stops_the_dag_with_one_message_listing_files(tmp_path):
    proc = snakemake("-n", "--configfile", "config/paper.yaml", data=tmp_path, check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    for name in ("cifar10", "svhn", "dermamnist", "mnist", "fashionmnist"):
        assert f"\n{name}: expected" in out
    assert str(tmp_path / "cifar-10-batches-py" / "data_batch_1") in out
    assert "datasets=[" in out and "Traceback" not in out


def test_datasets_config_restricts_the_dag(mirror_root):
    proc = snakemake("-n", "-q", "rules", "--forceall", "--configfile", "config/paper.yaml", "--config",
                     "datasets=[mnist]", data=mirror_root)
    assert job_counts(proc.stdout)["train"] == 65  # Table 2: (5 eps + 4 tempered + 4 LATENT) x 5 seeds


def test_train_false_aggregates_without_training(tiny_root):
    proc = snakemake("-n", "-q", "rules", "--configfile", "config/cpu.yaml", "--config", "train=false",
                     "--forcerun", "table2_mnist", "index", data=tiny_root)
    jobs = job_counts(proc.stdout)
    assert "train" not in jobs and jobs["table2_mnist"] == 1 and jobs["index"] == 1


def test_slurm_profile_dry_run_requests_the_gpu_as_gres(tiny_root):
    proc = snakemake("-n", "--forceall", "--profile", "profiles/slurm", "--config", "datasets=[mnist]", data=tiny_root)
    train_jobs = [block for block in proc.stdout.split("rule ")[1:] if block.startswith("train:")]
    assert len(train_jobs) == 65
    assert all("gres=gpu:1" in b and "gpu=0" in b and "--threads 4" in b for b in train_jobs)


@pytest.fixture(scope="module")
def smoke_dag(tmp_path_factory, mirror_root):
    """A copy of the workflow (Snakefile, config, notebooks, the package sources it tracks) run
    end to end with config/smoke.yaml, so that the repository's results/ stay untouched."""
    work = tmp_path_factory.mktemp("dag")
    shutil.copy(REPO / "Snakefile", work)
    for folder in ("config", "notebooks", "dirdp"):
        shutil.copytree(REPO / folder, work / folder, ignore=shutil.ignore_patterns("__pycache__"))
    proc = snakemake("--cores", "2", "--configfile", "config/smoke.yaml", cwd=work, data=mirror_root)
    return work, proc


def test_smoke_dag_runs_end_to_end_on_mnist(smoke_dag):
    work, _ = smoke_dag
    for name in OBJECTS:
        assert (work / "results" / f"{name}.csv").exists()
    table, prov = provenance.read_csv(work / "results/table2_mnist.csv")
    assert prov["config"]["profile"] == "smoke"
    here = table[(table.label == "run here") & (table.method == "Algorithm 1")].sort_values("eps")
    assert list(here.eps) == [1.0, float("inf")]
    baselines = table[(table.label == "run here") & (table.method != "Algorithm 1")]
    assert set(baselines.method) == {"Tempered sigmoid DP-SGD", "LATENT"} and (baselines.eps == 1.0).all()
    assert (here["mean"] > 0).all() and (here.n == 1).all()
    assert (here.status == "not comparable (reduced protocol)").all()
    assert here.certified_eps.iloc[0] <= 1.0  # r* recomputed for the smoke (q, T)
    cited = table[table.label == "paper, cited"]
    assert len(cited) > 0 and cited["mean"].isna().all()  # the paper's citations carry nothing of ours
    run = json.loads((work / "results/runs/smoke/mnist/alg1_eps1_seed0.json").read_text())
    assert run["steps"] == 4 and run["provenance"]["config"]["train_subset"] == 1000
    index = (work / "results/README.md").read_text()
    for obj in OBJECTS.values():
        assert f"results/{obj.name}.csv" in index
    assert "not run here" in index and "Table 6" in index and "Privacy audit" in index
    audit_table, _ = provenance.read_csv(work / "results/audit_canary.csv")
    assert set(audit_table.method) == {"alg1", "dpsgd", "latent"}
    released, _ = provenance.read_csv(work / "results/audit_released_models.csv")
    assert sorted(released.claimed_eps) == [1.0, 1.0, float("inf")]  # Algorithm 1 at 1 and inf, tempered at 1
    assert released.auc.between(0, 1).all()


def test_rerun_does_nothing_and_an_interrupted_dag_redoes_only_the_missing_run(smoke_dag):
    work, _ = smoke_dag
    again = snakemake("-n", "-q", "rules", "--configfile", "config/smoke.yaml", cwd=work)
    assert "Nothing to be done" in again.stdout + again.stderr
    # what an interrupted DAG leaves: one run unfinished, so nothing downstream of it was made
    for f in ["results/runs/smoke/mnist/alg1_epsinf_seed0.json", "results/table2_mnist.csv", "results/README.md"]:
        (work / f).unlink()
    redo = job_counts(snakemake("-n", "-q", "rules", "--configfile", "config/smoke.yaml", cwd=work).stdout)
    assert redo["train"] == 1 and redo["table2_mnist"] == 1 and redo["index"] == 1
    assert redo["audit_released_models"] == 1  # it attacks the run's model
    assert redo.get("table6_table7_rstar") is None and redo.get("theorem11_kappa_variance") is None
    assert redo.get("audit_privacy") is None  # it trains its own models
