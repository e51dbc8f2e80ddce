"""A replay of a run's stretch between two committed checkpoints, bit for bit, and what the campaign makes of it."""

import io
import json
import shutil
import subprocess
import sys

import pytest
import torch

import dirdp.training as training
from dirdp.training import make_config, train
from workflow.campaign import replay
from workflow.campaign.plan import made_dirty


def _git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture(scope="module")
def history(tiny_root, tmp_path_factory):
    """A git checkout holding a tiny run's result and, in two commits, its checkpoints at steps 4 and 8, the
    second session's provenance "+dirty" as a campaign's result of uncommitted code has it."""
    repo = tmp_path_factory.mktemp("replay-repo")
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.org")
    _git(repo, "config", "user.name", "t")
    out = repo / "results/runs/t/mnist/run.json"
    out.parent.mkdir(parents=True)
    ckpt = out.with_name(out.name + ".ckpt.pt")
    kept = {}
    save = training._save_atomic

    def keep(obj, path):
        save(obj, path)
        kept[obj["state"]["step"]] = path.read_bytes()

    cfg = make_config("mnist", 1.0, 0, steps=12, q=0.25, width=0.0625, eval_every=6, log_every=3, checkpoint_every=4)
    mp = pytest.MonkeyPatch()
    mp.setattr(training, "_save_atomic", keep)
    try:
        train(cfg, out, data_root=tiny_root, progress=False)
    finally:
        mp.undo()
    commits = {}
    for step in (4, 8):
        ckpt.write_bytes(kept[step])
        _git(repo, "add", "-f", str(ckpt.relative_to(repo)))
        _git(repo, "commit", "-q", "-m", f"step {step}")
        commits[step] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                                       text=True).stdout.strip()
    ckpt.unlink()
    rec = json.loads(out.read_text())
    rec["provenance"]["sessions"] = [dict(start_step=0, git_commit="a" * 40),
                                     dict(start_step=5, git_commit="b" * 40 + "+dirty"),
                                     dict(start_step=7, git_commit="c" * 40)]
    out.write_text(json.dumps(rec))
    return repo, out, commits, kept


@pytest.mark.slow  # trains a tiny run
def test_a_replay_between_two_committed_checkpoints_is_bit_for_bit_equal(history, tiny_root):
    repo, out, commits, _ = history
    got = replay.replay(out, commits[4], commits[8], data_root=tiny_root, progress=False, require_clean=False,
                        threads=torch.get_num_threads())
    assert got["equal"] and got["n_differences"] == 0 and got["tensors_compared"] > 10
    assert (got["before"]["step"], got["after"]["step"]) == (4, 8)
    assert replay.record_path(out) == repo / "results/campaign/t/replays/mnist/run.json"
    assert json.loads(replay.record_path(out).read_text()) == got
    rec = json.loads(out.read_text())
    assert not replay.covers({**got, "replayed_by": "d" * 40 + "+dirty"}, rec)  # uncommitted code answers nothing
    # as a clean checkout records it: the +dirty session 5..7 lies in steps 4..8, so the campaign does not redo it
    replay.record_path(out).write_text(json.dumps({**got, "replayed_by": "d" * 40}))
    assert replay.covers({**got, "replayed_by": "d" * 40}, rec) and made_dirty(out) is None


@pytest.mark.slow  # trains a tiny run
def test_a_changed_weight_is_found_and_the_result_stays_dirty(history, tiny_root, tmp_path):
    repo, out, commits, kept = history
    ckpt = out.with_name(out.name + ".ckpt.pt")
    tampered = torch.load(io.BytesIO(kept[8]), weights_only=False)
    name = next(iter(tampered["model"]))
    tampered["model"][name] = tampered["model"][name].clone()
    tampered["model"][name].view(-1)[0] += 1e-3
    torch.save(tampered, ckpt)
    _git(repo, "add", "-f", str(ckpt.relative_to(repo)))
    _git(repo, "commit", "-q", "-m", "tampered")
    ckpt.unlink()
    saved = replay.record_path(out).read_text()
    try:
        got = replay.replay(out, commits[4], "HEAD", data_root=tiny_root, progress=False, require_clean=False,
                        threads=torch.get_num_threads())
        assert not got["equal"] and got["differences"] == [f".model.{name}"]
        replay.record_path(out).write_text(json.dumps({**got, "replayed_by": "d" * 40}))
        assert made_dirty(out) is not None and made_dirty(out)["git_commit"].endswith("+dirty")
    finally:
        replay.record_path(out).write_text(saved)


@pytest.mark.slow  # trains a tiny run
def test_a_replay_that_does_not_reach_past_the_dirty_session_does_not_cover_it(history):
    _, out, commits, _ = history
    rec = json.loads(out.read_text())
    record = json.loads(replay.record_path(out).read_text())
    assert replay.covers(record, rec)
    assert not replay.covers({**record, "after": {**record["after"], "step": 6}}, rec)  # session 5..7 not inside
    assert not replay.covers({**record, "before": {**record["before"], "step": 6}}, rec)
    assert not replay.covers({**record, "equal": False}, rec)


@pytest.mark.slow  # trains a tiny run
def test_bad_input_gets_one_line(history, tmp_path):
    repo, out, commits, _ = history
    run = [sys.executable, "-m", "workflow.campaign.replay"]
    done = subprocess.run([*run, str(tmp_path / "none.json"), "--before", "x", "--after", "y"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no result" in done.stderr
    done = subprocess.run([*run, str(out), "--before", commits[8], "--after", commits[4]], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "give the earlier commit first" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("files, redone", [(["notebooks/headline.ipynb", "tests/test_dag.py"], False),
                                           (["dirdp/training.py", "tests/test_dag.py"], True), (None, True)])
def test_a_session_of_uncommitted_code_is_redone_only_where_training_code_differed(tmp_path, files, redone):
    """A "+dirty" session that recorded its differing files, none under dirdp/ (what `python -m dirdp train`
    imports), computed what its commit computes; one that changed dirdp/, or did not say, is trained again."""
    dirty = dict(start_step=5, git_commit="b" * 40 + "+dirty", **({"dirty_files": files} if files else {}))
    out = tmp_path / "results/runs/t/mnist/run.json"
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps(dict(test_accuracy=50.0, params_sha256="x", provenance=dict(
        git_commit="c" * 40, sessions=[dict(start_step=0, git_commit="a" * 40), dirty,
                                       dict(start_step=7, git_commit="c" * 40)]))))
    assert (made_dirty(out) is not None) == redone


def test_a_session_records_the_files_its_uncommitted_code_changed():
    prov = dict(git_commit="a" * 40 + "+dirty", dirty_files=["tests/x.py"], dirty_diff_sha256="f" * 64,
                device="cpu: AMD EPYC", created_utc="2026-12-06T13:08:58+00:00")
    session = training._session(5396, prov, torch.device("cpu"))
    assert session["dirty_files"] == ["tests/x.py"] and session["dirty_diff_sha256"] == "f" * 64
    prov.pop("dirty_files"), prov.pop("dirty_diff_sha256")  # committed code: provenance has no such key
    assert "dirty_files" not in training._session(0, dict(prov, git_commit="a" * 40), torch.device("cpu"))
