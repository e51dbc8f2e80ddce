"""Checkpoints are an interface: a run checkpointed by an earlier commit resumes under this one and ends
bit-identical to an uninterrupted run of that commit.

tests/data/ckpt_421b8cb/ holds checkpoints written at step 5 of 12 by commit 421b8cb (before the method
registry and the one loop), for Algorithm 1 at eps = 1 and eps = inf and for DP-SGD at eps = 2, on the tiny
MNIST of conftest.tiny_root, and ``expected.json``: each run's final params_sha256 and curves, uninterrupted,
under that commit. Made by a throwaway script run in a checkout of 421b8cb (patching
``training._save_atomic`` to keep the step-5 checkpoint), on a 2-core machine: torch's default of 2 intra-op
threads. The thread count sets how CPU kernels split their reductions, so the hashes hold only at 2 threads:
the tests pin it (on a machine with more cores, or under OMP_NUM_THREADS=1, the default would differ)."""

import json
import math
import shutil
from pathlib import Path

import pytest
import torch

from dirdp.data import load
from dirdp.training import make_config, train

from conftest import pinned_torch_threads

FIXTURE = Path(__file__).parent / "data" / "ckpt_421b8cb"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())
FIXTURE_THREADS = 2  # torch's intra-op threads when the fixture was made
fixture_threads = pinned_torch_threads(FIXTURE_THREADS)


def _run(name: str, tiny_root):
    """The fixture run ``name``: its expected record, its config and the tiny MNIST it trained on."""
    exp = EXPECTED[name]
    if exp["method"] == "dpsgd":
        pytest.importorskip("opacus")
    data = {s: load("mnist", s, root=tiny_root, download=False) for s in ("train", "test")}
    cfg = make_config("mnist", math.inf if exp["eps"] == "inf" else float(exp["eps"]), 0, method=exp["method"],
                      steps=12, q=0.25, width=0.0625, eval_every=6, log_every=4, checkpoint_every=5)
    return exp, cfg, data


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_checkpoint_of_the_previous_main_resumes_to_the_same_model(name, tiny_root, tmp_path, capsys):
    exp, cfg, data = _run(name, tiny_root)
    shutil.copy(FIXTURE / f"{name}.ckpt.pt", tmp_path / "x.json.ckpt.pt")
    res = train(cfg, tmp_path / "x.json", data=data, progress=False)
    assert "resumed from step 5 of 12" in capsys.readouterr().err
    assert res["params_sha256"] == exp["params_sha256"]
    # that commit recorded no sessions: the list begins at the resume (the session before it is unknown)
    assert [(x["start_step"], x["torch_threads"]) for x in res["provenance"]["sessions"]] == [(5, FIXTURE_THREADS)]
    assert res["loss_curve"] == exp["loss_curve"] and res["accuracy_curve"] == exp["accuracy_curve"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_an_uninterrupted_run_equals_the_previous_main(name, tiny_root, tmp_path):
    exp, cfg, data = _run(name, tiny_root)
    res = train(cfg, tmp_path / "x.json", data=data, progress=False)
    assert res["params_sha256"] == exp["params_sha256"]
    assert res["loss_curve"] == exp["loss_curve"]
