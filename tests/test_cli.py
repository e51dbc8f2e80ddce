"""``python -m dirdp rstar|epsilon`` and the provenance helpers."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from dirdp import accountant, provenance
from dirdp.presets import PRESETS


def run(*args):
    return subprocess.run([sys.executable, "-m", "dirdp", *args], capture_output=True, text=True)


def test_rstar_json_agrees_with_the_library():
    out = run("rstar", "--preset", "cifar10", "--eps", "1", "--json")
    assert out.returncode == 0, out.stderr
    rec = json.loads(out.stdout)
    p = PRESETS["cifar10"]
    assert rec["rstar"] == accountant.rstar(eps=1.0, alpha=3.0, q=p.q, steps=p.steps, delta=1e-5)
    assert rec["certified_epsilon"] <= 1.0 and rec["q"] == p.q and rec["steps"] == 20000


def test_rstar_text_and_overrides():
    out = run("rstar", "--preset", "mnist", "--eps", "1", "--steps", "100")
    assert out.returncode == 0 and out.stdout.startswith("r* = ") and "T=100" in out.stdout
    want = accountant.rstar(eps=1.0, alpha=3.0, q=PRESETS["mnist"].q, steps=100, delta=1e-5)
    assert f"{want:.6f}" in out.stdout


def test_epsilon_prints_epsilon_and_order():
    out = run("epsilon", "--preset", "mnist", "--r", "0.277", "--json")
    rec = json.loads(out.stdout)
    spend = accountant.epsilon(r=0.277, alpha=3.0, q=250 / 60000, steps=9600, delta=1e-5)
    assert rec["epsilon"] == spend.epsilon and rec["order"] == spend.order == 10


def test_infeasible_eps_exits_2_and_names_the_floor():
    out = run("rstar", "--preset", "cifar10", "--eps", "0.5")
    assert out.returncode == 2
    assert "0.675423" in out.stderr and "cannot be certified" in out.stderr


@pytest.mark.parametrize("args,match", [(("--alpha", "-1"), "Found alpha=-1.0"), (("--q", "2"), "Found q=2.0")])
def test_bad_input_says_what_was_found(args, match):
    out = run("rstar", "--preset", "mnist", "--eps", "1", *args)
    assert out.returncode == 2 and match in out.stderr


def test_missing_protocol_asks_for_a_preset():
    out = run("rstar", "--eps", "1")
    assert out.returncode != 0 and "--preset" in out.stderr


def test_provenance_round_trip(tmp_path):
    df = pd.DataFrame({"a": [1, 2], "b": [0.5, 0.25]})
    meta = provenance.collect({"eps": 1.0}, wall_time_s=1.23456, seed=3)
    path = provenance.write_csv(df, tmp_path / "x.csv", meta)
    back, meta_back = provenance.read_csv(path)
    pd.testing.assert_frame_equal(back, df)
    assert meta_back["config"] == {"eps": 1.0} and meta_back["seed"] == 3 and meta_back["wall_time_s"] == 1.235
    assert {"git_commit", "device", "versions", "created_utc"} <= set(meta_back)
    with pytest.raises(ValueError, match="no provenance line"):
        df.to_csv(tmp_path / "plain.csv", index=False)
        provenance.read_csv(tmp_path / "plain.csv")


def test_bench_prints_a_ratio_per_model():
    out = run("bench", "--models", "resnet9", "--width", "0.0625", "--reps", "1", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout.strip().splitlines()[-1])
    assert rows[0]["model"] == "resnet9" and rows[0]["batch"] == 70 and rows[0]["ratio"] > 0


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a CUDA device is present")
def test_train_on_missing_cuda_is_a_clear_error(tmp_path):
    out = run("train", "--dataset", "mnist", "--eps", "1", "--device", "cuda", "--steps", "2",
              "--out", str(tmp_path / "x.json"), "--data-root", str(tmp_path))
    assert out.returncode == 2 and "no CUDA device" in out.stderr


def test_train_without_data_names_the_files(tmp_path):
    out = run("train", "--dataset", "fashionmnist", "--eps", "1", "--steps", "2",
              "--out", str(tmp_path / "x.json"), "--data-root", str(tmp_path / "empty"))
    assert out.returncode == 2 and "train-images-idx3-ubyte.gz" in out.stderr and "Traceback" not in out.stderr


def test_bench_baselines_times_dpsgd_against_algorithm1_on_the_same_model():
    out = run("bench", "--models", "inception", "--width", "0.0625", "--reps", "1", "--baselines", "--json")
    assert out.returncode == 0, out.stderr
    rows = [r for r in json.loads(out.stdout.strip().splitlines()[-1]) if "dpsgd_s" in r]
    assert [r["model"] for r in rows] == ["inception", "papernot_cnn"]
    assert all(r["dpsgd_s"] > 0 and r["dpsgd_over_algorithm1"] > 0 for r in rows)
    assert "DP-SGD / Alg. 1" in out.stdout


def test_an_existing_result_of_another_run_is_refused_and_its_own_is_left_alone(tiny_root, tmp_path):
    out = tmp_path / "x.json"
    base = ["train", "--dataset", "mnist", "--steps", "2", "--q", "0.25", "--width", "0.0625", "--no-progress",
            "--data-root", str(tiny_root), "--out", str(out)]
    first = run(*base, "--eps", "1")
    assert first.returncode == 0, first.stderr
    made = out.read_bytes()
    same = run(*base, "--eps", "1", "--eval-every", "7")  # how often to evaluate is not part of the run
    assert same.returncode == 0 and "nothing to do" in same.stderr
    other = run(*base, "--eps", "2")
    assert other.returncode == 2 and "holds another run (eps: 1.0 there, 2.0 asked)" in other.stderr
    assert "Traceback" not in other.stderr and out.read_bytes() == made
    inf = run(*base[:-2], "--eps", "inf", "--out", str(tmp_path / "inf.json"))
    assert inf.returncode == 0 and "nothing to do" in run(*base[:-2], "--eps", "inf", "--out",
                                                           str(tmp_path / "inf.json")).stderr


@pytest.mark.parametrize("flags,match", [
    (["--eps", "inf", "--q", "1.5"], "q must be a sampling rate in (0, 1]. Found q=1.5"),
    (["--q", "0"], "Found q=0.0"),
    (["--train-subset", "0"], "train_subset must be at least 1 record"),
    (["--train-subset", "-5"], "Found train_subset=-5"),
    (["--eps", "inf", "--steps", "0"], "steps must be at least 1"),
    (["--eval-every", "0"], "eval_every must be at least 1 step"),
    (["--threads", "-1"], "--threads must be at least 1"),
    (["--model", "foo"], "model must be one of inception"),
    (["--device", "foo"], "device must be cpu, cuda or cuda:N"),
    (["--width", "0"], "width must be a channel multiplier"),
    (["--lr", "-1"], "lr must be > 0"),
])
def test_bad_train_arguments_are_refused_before_any_work(flags, match, tmp_path, capsys):
    from dirdp.__main__ import main

    out = tmp_path / "x.json"
    args = ["train", "--dataset", "mnist", "--eps", "1", "--out", str(out), "--data-root", str(tmp_path / "none"),
            *flags]
    args = args[:3] + args[5:] if flags[0] == "--eps" else args  # the case's own --eps wins
    assert main(args) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err and not out.exists() and not (tmp_path / "none").exists()
