"""The bundle for a GPU node without network must fit the default size cap: the tracked tree, plus what
scripts/gpu_prepare.sh adds by default (the raw data of FashionMNIST and the wheels of Opacus, opt_einsum and pytest),
under workflow.campaign.travel.SIZE_CAP (60 MiB, 15/16 of the default 64 MiB transfer limit). Every committed file
counts: a test that fails here means something large was committed (a full-width model, a checkpoint). The cap and
the limit are parameters ($DIRDP_SIZE_CAP_MIB, $DIRDP_TRANSFER_LIMIT_MIB, --size-cap-mib, --transfer-limit-mib)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from workflow.campaign import travel

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="no git checkout")


def test_the_tracked_tree_and_the_default_bundle_fit_the_default_size_cap():
    tracked = sum(travel.tracked(REPO).values())
    need = travel.carry_needed(travel.DEFAULT_DATASETS)
    total = tracked + need
    assert travel.SIZE_CAP == 60 * travel.MIB == travel.size_cap(env={})
    assert total <= travel.SIZE_CAP, (
        f"tracked tree {tracked:,} bytes + the default bundle's data and wheels {need:,} bytes = {total:,} bytes, over "
        f"{travel.SIZE_CAP:,} (60 MiB): drop or ignore some of the largest tracked files: "
        f"{sorted(travel.tracked(REPO).items(), key=lambda kv: -kv[1])[:5]}")


def test_no_full_width_gpu_model_or_python_cache_is_tracked():
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    assert not [f for f in files if f.startswith("results/runs/gpu/") and f.endswith(".model.pt")]
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", "results/runs/gpu/mnist/alg1_eps1_seed0.model.pt"],
                             cwd=REPO)
    assert ignored.returncode == 0, "results/runs/gpu/**/*.model.pt must be git-ignored (kept out of the tree)"


def test_the_measurement_counts_tracked_untracked_and_carry(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("DIRDP_SIZE_CAP_MIB", raising=False)
    monkeypatch.delenv("DIRDP_TRANSFER_LIMIT_MIB", raising=False)
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
        f.truncate(travel.SIZE_CAP)
    (root / ".gpu" / "wheels").mkdir()
    (root / ".gpu" / "wheels" / "w.whl").write_bytes(b"w" * 10)
    capsys.readouterr()
    assert travel.main(["--root", str(root), "--carry", ".gpu"]) == 2
    err = capsys.readouterr().err
    assert "over the size cap, 60 MiB" in err
    assert ".gpu/data/big  (a data set this campaign need not train" in err
    assert ".gpu/wheels/w.whl  (bundled by scripts/gpu_prepare.sh)" in err
    # a larger cap, by option or by environment, takes it; the measurement records the cap it was checked against
    out = root / "TRAVEL.json"
    assert travel.main(["--root", str(root), "--carry", ".gpu", "--transfer-limit-mib", "70", "--write", str(out)]) == 0
    assert json.loads(out.read_text())["size_cap_bytes"] == 70 * travel.MIB * 15 // 16
    monkeypatch.setenv("DIRDP_SIZE_CAP_MIB", "61")
    monkeypatch.setenv("DIRDP_TRANSFER_LIMIT_MIB", "61")
    assert travel.main(["--root", str(root), "--carry", ".gpu"]) == 0
    assert travel.main(["--root", str(root), "--carry", ".gpu", "--size-cap-mib", "60"]) == 2


def test_save_is_told_when_the_tracked_tree_would_no_longer_fit(tmp_path, monkeypatch):
    monkeypatch.delenv("DIRDP_SIZE_CAP_MIB", raising=False)
    monkeypatch.delenv("DIRDP_TRANSFER_LIMIT_MIB", raising=False)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "small").write_bytes(b"x" * 1000)
    subprocess.run([*git, "add", "small"], cwd=tmp_path, check=True)
    assert travel.over_size_cap(tmp_path) is None
    room = travel.SIZE_CAP - travel.carry_needed() - 1000
    with open(tmp_path / "ckpt.pt", "wb") as f:  # staged, not committed: counted (save checks before its commit)
        f.truncate(room + 1)
    subprocess.run([*git, "add", "ckpt.pt"], cwd=tmp_path, check=True)
    said = travel.over_size_cap(tmp_path)
    assert said and "1 bytes over the size cap, 60 MiB" in said and said.index("ckpt.pt") < said.index("small")
    assert travel.over_size_cap(tmp_path, cap=travel.SIZE_CAP + 1) is None  # a cap one byte larger takes it


@pytest.mark.parametrize("env, given, says", [
    ({"DIRDP_SIZE_CAP_MIB": "0"}, {}, "$DIRDP_SIZE_CAP_MIB must be a positive number of MiB"),
    ({"DIRDP_TRANSFER_LIMIT_MIB": "lots"}, {}, "$DIRDP_TRANSFER_LIMIT_MIB must be a positive number of MiB"),
    ({}, {"given_mib": float("nan")}, "--size-cap-mib must be a positive number of MiB"),
    ({"DIRDP_SIZE_CAP_MIB": "65"}, {}, "above the transfer limit (64 MiB)"),
    ({"DIRDP_TRANSFER_LIMIT_MIB": "32"}, {"given_mib": 40.0}, "above the transfer limit (32 MiB)"),
])
def test_a_bad_size_cap_or_transfer_limit_is_refused_naming_it(env, given, says):
    with pytest.raises(ValueError) as err:
        travel.size_cap(env=env, **given)
    assert says in str(err.value)


def test_the_cap_follows_the_transfer_limit_and_a_bad_one_is_one_line_and_exit_2(tmp_path, capsys):
    assert travel.size_cap(env={"DIRDP_TRANSFER_LIMIT_MIB": "128"}) == 120 * travel.MIB
    assert travel.size_cap(env={"DIRDP_TRANSFER_LIMIT_MIB": "128", "DIRDP_SIZE_CAP_MIB": "100"}) == 100 * travel.MIB
    assert travel.transfer_limit(env={}) == travel.TRANSFER_LIMIT == 64 * travel.MIB
    assert travel.main(["--root", str(tmp_path), "--size-cap-mib", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "--size-cap-mib must be a positive number of MiB" in err


def test_the_campaign_packs_checkpoints_against_the_cap_the_bundle_was_prepared_under(tmp_path, monkeypatch):
    monkeypatch.delenv("DIRDP_SIZE_CAP_MIB", raising=False)
    monkeypatch.delenv("DIRDP_TRANSFER_LIMIT_MIB", raising=False)
    assert travel.measured(tmp_path) == (None, travel.SIZE_CAP)  # no .gpu/TRAVEL.json: the default cap
    (tmp_path / ".gpu").mkdir()
    (tmp_path / ".gpu" / "TRAVEL.json").write_text(json.dumps(dict(total_bytes=1234, size_cap_bytes=99 * travel.MIB)))
    assert travel.measured(tmp_path) == (1234, 99 * travel.MIB)
