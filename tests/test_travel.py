"""The GPU campaign's call must fit the device's size rule: the tracked tree, plus the carry a first call needs
(the raw data of the data set it trains and the wheels of Opacus, opt_einsum and pytest), under
dirdp.campaign.travel.REFUSE_OVER (60 MiB; the device refuses a working tree over 64 MiB). Every committed file
counts: a test that fails here means something large was committed (a full-width model, a checkpoint)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from dirdp.campaign import travel

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="no git checkout")


def test_the_tracked_tree_and_the_first_calls_carry_fit_the_device():
    tracked = sum(travel.tracked(REPO).values())
    need = travel.carry_needed(travel.FIRST_CALL_DATASETS)
    total = tracked + need
    assert total <= travel.REFUSE_OVER, (
        f"tracked tree {tracked:,} bytes + the first call's carry {need:,} bytes = {total:,} bytes, over "
        f"{travel.REFUSE_OVER:,} (60 MiB): drop or ignore some of the largest tracked files: "
        f"{sorted(travel.tracked(REPO).items(), key=lambda kv: -kv[1])[:5]}")


def test_no_full_width_gpu_model_or_python_cache_is_tracked():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert not [f for f in files if f.startswith("results/runs/gpu/") and f.endswith(".model.pt")]
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", "results/runs/gpu/mnist/alg1_eps1_seed0.model.pt"],
                             cwd=REPO)
    assert ignored.returncode == 0, "results/runs/gpu/**/*.model.pt must be git-ignored (kept out of the tree)"


def test_the_measurement_counts_tracked_untracked_and_carry(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    (root / ".gitignore").write_text(".gpu/\n")
    (root / "a.txt").write_bytes(b"x" * 1000)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "a"], cwd=root, check=True)
    (root / "new.txt").write_bytes(b"y" * 300)             # untracked, not ignored: travels
    (root / ".gpu" / "data").mkdir(parents=True)
    (root / ".gpu" / "data" / "big").write_bytes(b"z" * 5000)  # carried
    t = travel.travelling(root, (".gpu",))
    assert t["tracked_bytes"] == 1000 + len(".gpu/\n") and t["untracked_bytes"] == 300
    assert t["carry"][".gpu"] == 5000 and t["total_bytes"] == 1000 + 6 + 300 + 5000
    assert travel.main(["--root", str(root), "--carry", ".gpu"]) == 0
    (root / ".gpu" / "data" / "big").write_bytes(b"")
    with open(root / ".gpu" / "data" / "big", "wb") as f:  # a sparse file over the limit
        f.truncate(travel.REFUSE_OVER)
    assert travel.main(["--root", str(root), "--carry", ".gpu"]) == 2


def test_save_is_told_when_the_tracked_tree_would_no_longer_fit(tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "small").write_bytes(b"x" * 1000)
    subprocess.run([*git, "add", "small"], cwd=tmp_path, check=True)
    assert travel.first_call_over(tmp_path) is None
    room = travel.REFUSE_OVER - travel.carry_needed() - 1000
    with open(tmp_path / "ckpt.pt", "wb") as f:  # staged, not committed: counted (save checks before its commit)
        f.truncate(room + 1)
    subprocess.run([*git, "add", "ckpt.pt"], cwd=tmp_path, check=True)
    said = travel.first_call_over(tmp_path)
    assert said and "1 bytes over 60 MiB" in said and said.index("ckpt.pt") < said.index("small")
