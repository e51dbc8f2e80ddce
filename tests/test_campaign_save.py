"""`bash scripts/campaign.sh save` on a repository of its own: a finished run whose weights .gitignore keeps out of
git (full width) gets its membership record (RUN.json.membership) in the same commit, so that the audit of the
released models can show it from a clean checkout; a run whose weights are committed gets none."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from dirdp import training
from dirdp.run_result import weights_path
from workflow.audit import released

REPO = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]


def test_save_commits_the_membership_record_of_a_run_whose_weights_stay_out_of_git(tmp_path, mirror_root):
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
