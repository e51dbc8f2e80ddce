"""`bash scripts/campaign.sh save` on a repository of its own: a finished run whose weights .gitignore keeps out of
git (full width) gets its membership record (RUN.json.membership) in the same commit, so that the audit of the
released models can show it from a clean checkout; a run whose weights are committed gets none."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dirdp import training
from dirdp.run_result import weights_path
from workflow.audit import released

REPO = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def _repo(tmp_path: Path) -> Path:
    """A git repository holding scripts/campaign.sh, the cpu profile and .gitignore, with a stand-in .venv."""
    work = tmp_path / "repo"
    for f in ("scripts/campaign.sh", "config/cpu.yaml", ".gitignore"):
        (work / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / f, work / f)
    (work / ".venv" / "bin").mkdir(parents=True)
    python = work / ".venv" / "bin" / "python"  # a wrapper: a symlink would lose the venv's packages
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    subprocess.run([*GIT, "init", "-q"], cwd=work, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=work, check=True)
    subprocess.run([*GIT, "commit", "-qm", "fixture"], cwd=work, check=True)
    return work


def _campaign(work: Path, action: str, env: dict) -> subprocess.CompletedProcess:
    env = {**env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PYTHONPATH": str(REPO)}  # this checkout's dirdp and workflow
    return subprocess.run(["bash", "scripts/campaign.sh", action], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)


def _git(work: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=work, capture_output=True, text=True, check=True).stdout


@pytest.mark.slow
def test_save_commits_the_membership_record_of_a_run_whose_weights_stay_out_of_git(tmp_path, mirror_root):
    work = _repo(tmp_path)
    runs = work / "results/runs/cpu/mnist"
    cfg = training.make_config("mnist", 1.0, 0, steps=2, q=0.01, width=0.125, train_subset=200, eval_every=2)
    full = runs / "alg1_w1_bf16_eps1_seed7.json"  # named like a full-width run: its weights are ignored
    training.train(cfg, full, data=training.load_data(cfg, mirror_root), progress=False)
    reduced = runs / "alg1_eps1_seed7.json"  # its weights are committed: the audit reads them, no record
    shutil.copy(full, reduced)
    shutil.copy(weights_path(full), weights_path(reduced))
    env = dict(os.environ, DIRDP_DATA=str(mirror_root), OMP_NUM_THREADS="1")
    env.pop("PYTHONPATH", None)
    env["PYTHONPATH"] = str(REPO)  # this checkout's dirdp (the fixture holds no package)
    proc = subprocess.run(["bash", "scripts/campaign.sh", "save"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    committed = subprocess.run(["git", "show", "--name-only", "--format=%s", "HEAD"], cwd=work, capture_output=True,
                               text=True, check=True).stdout.split("\n")
    assert committed[0].startswith("campaign (cpu): results and checkpoints as of"), proc.stdout + proc.stderr
    record = str(released.record_path(full).relative_to(work))
    assert record in committed and str(full.relative_to(work)) in committed
    assert str(weights_path(full).relative_to(work)) not in committed  # still out of git
    assert str(weights_path(reduced).relative_to(work)) in committed
    assert not released.record_path(reduced).exists()
    assert released.why_no_record(full, n=released.RELEASED_MODELS_N, seed=0) is None  # the DAG's n and seed
    assert "AUC 0." in proc.stdout


@pytest.mark.slow
def test_save_parks_an_unfinished_runs_checkpoint_in_history_and_a_fresh_clone_restores_it(tmp_path):
    """save: one commit adds the checkpoint of an unfinished run, the next takes it out of the tree and records in
    results/campaign/cpu/parked.json where history holds it (the tree a GPU node is sent never carries it); a fresh
    clone's restore writes it back byte for byte and never replaces a local one; a shallow clone, which lacks the
    blob, is told in one line; land commits a result that landed, and its entry leaves the ledger."""
    import torch

    from workflow.campaign import parked, plan

    work = _repo(tmp_path)
    result = "results/runs/cpu/mnist/alg1_w1_bf16_eps4_seed0.json"  # a run the cpu profile declares
    ckpt = work / (result + ".ckpt.pt")
    ckpt.parent.mkdir(parents=True)
    torch.save(dict(state=dict(step=3), model={}), ckpt)
    content = ckpt.read_bytes()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = _campaign(work, "save", env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr
    subjects = _git(work, "log", "--format=%s", "-3").splitlines()
    assert subjects[0].startswith("campaign (cpu): 1 checkpoint(s) of unfinished runs parked"), said
    assert subjects[1].startswith("campaign (cpu): results and checkpoints as of"), said
    added = _git(work, "ls-tree", "-r", "HEAD~1", "--", str(ckpt.relative_to(work))).split()
    assert added and added[1] == "blob"
    assert str(ckpt.relative_to(work)) not in _git(work, "ls-tree", "-r", "--name-only", "HEAD")  # out of the tree
    assert ckpt.read_bytes() == content  # the local one stays, ignored again
    assert _git(work, "status", "--porcelain") == ""
    entry = parked.read(work, "cpu")[result]
    assert entry["blob"] == added[2] and entry["step"] == 3 and entry["bytes"] == len(content)
    assert entry["commit"] == _git(work, "rev-parse", "HEAD~1").strip()
    assert "alg1_w1_bf16_eps4_seed0" in proc.stdout and "checkpoint at step 3" in proc.stdout

    clone = tmp_path / "clone"  # the next session: a fresh clone
    subprocess.run(["git", "clone", "-q", str(work), str(clone)], check=True)
    line = [x for x in plan.status(clone / "config/cpu.yaml", workdir=clone).splitlines() if "eps4_seed0" in x]
    assert "parked" in line[0] and "step 3" in line[0] and entry["commit"][:12] in line[0], line
    assert parked.restore(clone, "cpu", say=lambda m: None) == [entry["checkpoint"]]
    assert (clone / entry["checkpoint"]).read_bytes() == content
    (clone / entry["checkpoint"]).write_bytes(b"further on")  # a local checkpoint is never replaced
    assert parked.restore(clone, "cpu", say=lambda m: None) == []
    assert (clone / entry["checkpoint"]).read_bytes() == b"further on"

    shallow = tmp_path / "shallow"  # a clone without the history that holds the blob
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{work}", str(shallow)], check=True)
    proc = subprocess.run([sys.executable, "-m", "workflow.campaign.parked", "restore", "--root", str(shallow)],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "not in this clone" in proc.stderr, proc.stderr
    assert not (shallow / entry["checkpoint"]).exists()

    (work / result).write_text(json.dumps(dict(test_accuracy=99.0, steps=9600, wall_time_s=60,
                                               provenance=dict(git_commit="0" * 40))))
    ckpt.unlink()  # a finished run deletes its checkpoint
    proc = _campaign(work, "land", env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _git(work, "log", "--format=%s", "-1").startswith("campaign (cpu): results as of")
    changed = _git(work, "show", "--name-status", "--format=", "HEAD").splitlines()
    assert sorted(changed) == sorted([f"A\t{result}", "D\tresults/campaign/cpu/parked.json"]), changed
