"""``python -m dirdp rstar|epsilon`` (and the workflow's ``python -m workflow``, whose command line follows the same
rules; a workflow command asked of ``python -m dirdp`` gets one line pointing there) and the provenance helpers."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dirdp import accountant, provenance
from dirdp.presets import PRESETS


def run(*args, module="dirdp", cwd=None):
    """``python -m <module> <args>`` (the library's command line unless ``module`` says otherwise) as a process."""
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=cwd)


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


@pytest.mark.slow
def test_bench_prints_a_ratio_per_model():
    out = run("bench", "--models", "resnet9", "--width", "0.0625", "--reps", "1", "--json", module="workflow")
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


def test_an_infeasible_eps_is_refused_before_the_data_is_looked_for(tmp_path, capsys):
    # no data anywhere: the calibration's error comes out, not the missing data's (nor a download attempt)
    out = tmp_path / "runs" / "x.json"
    assert cli(["train", "--dataset", "cifar10", "--eps", "0.3", "--out", out,
                "--data-root", tmp_path / "none"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: eps=0.3") and "cifar-10-batches-py" not in err and "Traceback" not in err
    assert not (tmp_path / "none").exists() and not out.parent.exists()


@pytest.mark.slow
def test_bench_baselines_times_dpsgd_against_algorithm1_on_the_same_model():
    out = run("bench", "--models", "inception", "--width", "0.0625", "--reps", "1", "--baselines", "--json",
              module="workflow")
    assert out.returncode == 0, out.stderr
    rows = [r for r in json.loads(out.stdout.strip().splitlines()[-1]) if "dpsgd_s" in r]
    assert [r["model"] for r in rows] == ["inception", "papernot_cnn"]
    assert all(r["dpsgd_s"] > 0 and r["dpsgd_over_algorithm1"] > 0 for r in rows)
    assert "DP-SGD / Alg. 1" in out.stdout


@pytest.mark.slow
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
    (["--eps", "inf", "--q", "1.5"], "q must be a sampling rate in (0, 1), where Theorem 10 holds"),
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


# ------------------------------------------------------------------ bad input: exit 2, one `error:` line, nothing lost

def cli(argv, module="dirdp"):
    """``python -m <module> <argv>`` in this process (the library's command line, or ``module="workflow"`` the
    workflow's): its exit status (argparse's SystemExit counts)."""
    from dirdp.__main__ import main
    from workflow.__main__ import main as workflow_main

    argv = [str(a) for a in argv]
    try:
        return {"dirdp": main, "workflow": workflow_main}[module](argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) or stop.code is None else f"SystemExit({stop.code!r})"


def wcli(argv):
    """``python -m workflow <argv>`` in this process (:func:`cli`)."""
    return cli(argv, module="workflow")


def one_error_line(err: str) -> str:
    """The only line of ``err`` (stderr), which must read ``error: ...``."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def strict_json(text: str):
    """JSON as the standard defines it: no Infinity, -Infinity or NaN."""
    def refuse(constant):
        raise AssertionError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def tiny_mnist(root):
    from conftest import write_idx
    import numpy as np

    rng = np.random.default_rng(0)
    for prefix, n in (("train", 64), ("t10k", 32)):
        write_idx(root / "MNIST" / "raw" / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        write_idx(root / "MNIST" / "raw" / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    return root


@pytest.mark.parametrize("damage", ["truncated gzip", "truncated IDX"])
def test_a_truncated_data_file_is_named_with_what_to_do(damage, tmp_path, capsys):
    root = tiny_mnist(tmp_path / "data")
    gz = root / "MNIST" / "raw" / "train-images-idx3-ubyte.gz"
    if damage == "truncated gzip":
        bad = gz
        bad.write_bytes(gz.read_bytes()[:200])
    else:  # a plain IDX file, cut short (it is preferred to the .gz beside it)
        import gzip

        bad = gz.with_suffix("")
        bad.write_bytes(gzip.decompress(gz.read_bytes())[:5000])
    out = tmp_path / "x.json"
    assert cli(["train", "--dataset", "mnist", "--eps", "inf", "--steps", "2", "--q", "0.25", "--width", "0.0625",
                "--no-progress", "--data-root", root, "--out", out]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert str(bad) in line and "Delete it and download it again" in line and not out.exists()


def test_a_missing_data_root_is_not_created_and_a_failed_download_leaves_no_folders(tmp_path, capsys, monkeypatch):
    import torchvision

    from dirdp import data

    class OfflineMNIST:  # what torchvision does offline: make <root>/MNIST/raw, then fail
        def __init__(self, root, train=True, download=False):
            (Path(root) / "MNIST" / "raw").mkdir(parents=True, exist_ok=True)
            raise RuntimeError("Error downloading train-images-idx3-ubyte.gz (no network)")

    monkeypatch.setattr(torchvision.datasets, "MNIST", OfflineMNIST)
    monkeypatch.setattr(data, "why_no_download", lambda spec, root: None)  # as if the host answered
    train = ["train", "--dataset", "mnist", "--eps", "1", "--steps", "2", "--out", tmp_path / "out" / "x.json"]
    assert cli([*train, "--data-root", tmp_path / "no" / "such" / "path"]) == 2  # a mistyped root
    announced, rest = capsys.readouterr().err.split("\n", 1)  # the download is announced, then it fails
    assert announced.endswith("downloading it from ossci-datasets.s3.amazonaws.com")
    line = one_error_line(rest)
    assert line.startswith(f"error: mnist is not under the data root {tmp_path / 'no' / 'such' / 'path'}, which "
                           "does not exist (MNIST/raw/train-images-idx3-ubyte.gz and 3 more files missing")
    assert "the download failed: RuntimeError: Error downloading" in line and not (tmp_path / "no").exists()
    assert cli([*train, "--data-root", tmp_path]) == 2  # an existing root: no empty MNIST/raw left in it
    announced, rest = capsys.readouterr().err.split("\n", 1)
    assert announced.endswith("downloading it from ossci-datasets.s3.amazonaws.com")
    assert one_error_line(rest).startswith(f"error: mnist is not under the data root {tmp_path} (")
    assert not (tmp_path / "MNIST").exists() and not list((tmp_path / "out").glob("*.lock"))


@pytest.mark.parametrize("args,match", [
    (["rstar", "--preset", "mnist", "--eps", "1", "--max-order", "100000"],
     "max_order must be an integer in [2, 10000]"),
    (["rstar", "--preset", "mnist", "--eps", "1", "--max-order", "1"], "Found max_order=1"),
    (["rstar", "--preset", "mnist", "--eps", "inf"], "eps = inf needs no r: "),
    (["rstar", "--eps", "1"], "give --preset or --alpha"),
    (["rstar", "--eps", "1", "--alpha", "3", "--q", "0.01"], "give --preset or --steps"),
    (["epsilon", "--preset", "mnist", "--r", "3"], "r must lie in (0, alpha) = (0, 3.0). Found r=3.0"),
    (["epsilon", "--preset", "mnist", "--r", "-0.5"], "Found r=-0.5"),
    (["epsilon", "--preset", "mnist", "--r", "nan"], "Found r=nan"),
])
def test_bad_accountant_input_exits_2_with_one_line(args, match, capsys):
    assert cli(args) == 2
    assert match in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("args", [
    ["rstar", "--preset", "mnist", "--eps", "inf"],
    ["rstar", "--preset", "mnist", "--eps", "1", "--alpha", "inf"],
    ["rstar", "--preset", "mnist", "--eps", "1", "--delta", "nan"],
    ["epsilon", "--preset", "mnist", "--r", "0.2", "--q=-inf"],
    ["rstar", "--eps", "nan"],
])
def test_json_output_is_always_json(args, capsys):
    assert cli([*args, "--json"]) == 2
    out = capsys.readouterr()
    rec = strict_json(out.out)
    assert rec["error"] in out.err and "Infinity" not in out.out and "NaN" not in out.out


def test_non_finite_protocol_values_come_back_as_strings_in_json(capsys):
    assert cli(["rstar", "--preset", "mnist", "--eps", "1", "--alpha", "inf", "--json"]) == 2
    assert strict_json(capsys.readouterr().out)["alpha"] == "inf"


def test_index_refuses_a_missing_out_folder_and_an_unknown_profile(tmp_path, capsys):
    out = tmp_path / "missing" / "README.md"
    assert wcli(["index", "--results", tmp_path, "--profile", "cpu", "--out", out]) == 2
    assert f"the folder {out.parent} does not exist" in one_error_line(capsys.readouterr().err)
    assert not out.parent.exists()
    assert wcli(["index", "--results", tmp_path, "--profile", "nonsense", "--out", tmp_path / "README.md"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "config/nonsense.yaml" in line and "cpu, gpu, paper, quick, smoke" in line
    assert not (tmp_path / "README.md").exists()


def test_index_refuses_a_results_folder_that_does_not_exist(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert wcli(["index", "--results", missing, "--profile", "cpu", "--out", tmp_path / "README.md"]) == 2
    assert f"--results {missing}: the folder does not exist" in one_error_line(capsys.readouterr().err)
    (tmp_path / "afile").write_text("")
    out = tmp_path / "README.md"
    assert wcli(["index", "--results", tmp_path / "afile", "--profile", "cpu", "--out", out]) == 2
    assert "the folder is a file, not a folder" in one_error_line(capsys.readouterr().err)
    assert not missing.exists() and not (tmp_path / "README.md").exists()


@pytest.mark.parametrize("flags,match", [
    (["--width", "0.001"], "width must be a channel multiplier in [0.0625, 8]"),
    (["--width", "nan"], "Found width=nan"),
    (["--alpha", "inf"], "alpha must be > 0 and finite"),
    (["--lr", "inf"], "lr must be > 0 and finite"),
    (["--max-grad-norm", "inf"], "max_grad_norm must be > 0 and finite"),
])
def test_more_bad_train_arguments_are_refused_before_any_work(flags, match, tmp_path, capsys):
    out = tmp_path / "x.json"
    assert cli(["train", "--dataset", "mnist", "--eps", "1", "--out", out, "--data-root", tmp_path / "none",
                *flags]) == 2
    assert match in one_error_line(capsys.readouterr().err)
    assert not out.exists() and not (tmp_path / "none").exists()


def test_an_out_that_cannot_be_written_is_refused_before_training(tiny_root, tmp_path, capsys, monkeypatch):
    base = ["train", "--dataset", "mnist", "--eps", "inf", "--steps", "2", "--q", "0.25", "--width", "0.0625",
            "--no-progress", "--data-root", tiny_root]
    (tmp_path / "afile").write_text("")
    # a folder that can never be made: a file is in its way
    assert cli([*base, "--out", tmp_path / "afile" / "sub" / "x.json"]) == 2
    assert f"{tmp_path / 'afile'} is a file, not a folder" in one_error_line(capsys.readouterr().err)
    # an existing folder as --out: not "a result that exists", with or without --force
    for force in ([], ["--force"]):
        assert cli([*base, "--out", tmp_path, *force]) == 2
        assert f"--out {tmp_path} is a folder" in one_error_line(capsys.readouterr().err)
    # a read-only folder (root may write anyway: then the refusal of the operating system is simulated)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    import os
    import tempfile

    if os.access(ro, os.W_OK):
        def refuse(*args, **kwargs):
            raise PermissionError(13, "Permission denied")
        monkeypatch.setattr(tempfile, "TemporaryFile", refuse)
    import dirdp.training

    monkeypatch.setattr(dirdp.training, "load_data", lambda *a, **k: pytest.fail("data loaded before the check"))
    assert cli([*base, "--out", ro / "x.json"]) == 2
    assert f"the folder {ro} cannot be created or written (PermissionError: Permission denied)" in \
        one_error_line(capsys.readouterr().err)
    ro.chmod(0o755)


@pytest.mark.parametrize("flags,match", [
    (["--width", "0"], "--width must be a channel multiplier"),
    (["--reps", "0"], "--reps must be at least 1"),
    (["--threads", "-1"], "--threads must be at least 1"),
    (["--device", "foo"], "--device must be cpu, cuda or cuda:N"),
])
def test_bad_bench_arguments_exit_2_before_any_model_is_built(flags, match, capsys, monkeypatch):
    from workflow.bench import core

    monkeypatch.setattr(core, "main", lambda *a, **k: pytest.fail("bench ran"))
    assert wcli(["bench", "--models", "resnet9", "--width", "0.0625", *flags]) == 2
    assert match in one_error_line(capsys.readouterr().err)


@pytest.mark.parametrize("flags,match", [(["--max-runs", "0"], "--max-runs must be at least 1"),
                                         (["--bench-reps", "0"], "--bench-reps must be at least 1"),
                                         (["--budget", "nan"], "--budget must be >= 0")])
def test_bad_campaign_arguments_exit_2_before_anything_runs(flags, match, capsys, monkeypatch):
    from workflow.campaign import run

    monkeypatch.setattr(run, "run_campaign", lambda *a, **k: pytest.fail("the campaign ran"))
    assert wcli(["campaign", "run", "--smoke", *flags]) == 2
    assert match in one_error_line(capsys.readouterr().err)


def test_an_empty_value_after_equals_dashes_is_a_usage_error(capsys):
    # argparse (Python 3.11) turns "--delta=--" into [] instead of refusing it
    assert cli(["epsilon", "--preset", "mnist", "--r", "0.3", "--delta=--"]) == 2
    assert "argument --delta: expected one argument" in capsys.readouterr().err


def test_every_flag_of_every_command_says_what_it_does():
    """`python -m dirdp <command> --help` (and `python -m workflow <command> --help`) documents each of its arguments
    (a flag with no help is one a reader has to find in the code)."""
    import argparse

    bare = [f"{' '.join(path)} {a.option_strings[0] if a.option_strings else a.dest}"
            for path, parser in _parsers() for a in parser._actions
            if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help]
    assert len(_parsers()) > 8 and bare == []


# ------------------------------------------------------------------ issue 30: one line per mistake, q, lock files, help

ARGPARSE_MISTAKES = [  # (module, argv): python -m <module> <argv>
    ("dirdp", ["rstar", "--preset", "mnist", "--eps", "one"]),
    ("dirdp", ["train", "--dataset", "mnist", "--eps", "1", "--method", "foo", "--out", "{tmp}/r.json"]),
    ("dirdp", ["train", "--dataset", "mnist", "--eps", "-1", "--out", "{tmp}/r.json"]),
    ("dirdp", ["train", "--dataset", "mnist", "--eps", "1", "--q", "1/0", "--out", "{tmp}/r.json"]),
    ("dirdp", ["train", "--dataset", "mnist", "--eps", "1"]),
    ("dirdp", ["epsilon", "--preset", "mnist", "--r", "x"]),
    ("dirdp", ["nonsense"]),
    ("dirdp", []),
    ("workflow", ["index", "--bogus"]),
    ("workflow", ["readme", "--check", "extra"]),
    ("workflow", ["bench", "--models", "vgg"]),
    ("workflow", ["campaign", "run", "--k", "two"]),
    ("workflow", ["campaign", "status", "--config"]),
    ("workflow", ["campaign", "unpack"]),
    ("workflow", ["campaign"]),
    ("workflow", ["nonsense"]),
    ("workflow", []),
]


@pytest.mark.slow
@pytest.mark.parametrize("module, argv", ARGPARSE_MISTAKES,
                         ids=[" ".join([m, *a[:3]]) for m, a in ARGPARSE_MISTAKES])
def test_every_argparse_mistake_is_one_error_line_and_exit_2(module, argv, tmp_path):
    """argparse's own refusals (a type, a choice, a missing or extra argument) in a real process: one line on
    standard error, "error: ...", exit status 2, no usage block, no traceback, nothing written."""
    out = run(*[a.format(tmp=tmp_path) for a in argv], module=module)
    assert out.returncode == 2 and out.stdout == ""
    line = one_error_line(out.stderr)
    assert "usage:" not in out.stderr and line.endswith("--help)") and list(tmp_path.iterdir()) == []


def test_rstar_eps_minus_one_is_one_line_too(capsys):
    assert cli(["rstar", "--preset", "mnist", "--eps", "-1"]) == 2
    assert one_error_line(capsys.readouterr().err) == "error: eps must be > 0. Found eps=-1.0."


@pytest.mark.parametrize("text,rate", [("250/60000", 250 / 60000), ("0.004", 0.004), ("1/4", 0.25), (" 1 / 8 ", 0.125),
                                       ("2.5e-3", 0.0025)])
def test_a_rate_may_be_written_as_a_fraction(text, rate):
    from dirdp.cli import build_parser, parse
    from dirdp.training import make_config

    def _parse(argv):
        return parse(build_parser(), argv)

    args = _parse(["train", "--dataset", "mnist", "--eps", "1", "--out", "x.json", "--q", text])
    assert args.q == rate
    assert make_config("mnist", 1.0, q=args.q).q == rate
    assert _parse(["rstar", "--preset", "mnist", "--eps", "1", "--q", text]).q == rate
    assert _parse(["epsilon", "--preset", "mnist", "--r", "0.3", "--q", text]).q == rate


def test_rstar_with_the_paper_s_fraction_equals_the_preset(capsys):
    assert cli(["rstar", "--preset", "mnist", "--eps", "1", "--q", "250/60000", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rstar"] == accountant.rstar(eps=1.0, alpha=3.0, q=250 / 60000,
                                                                            steps=9600, delta=1e-5)


def test_q_is_refused_with_one_interval_everywhere(tmp_path, capsys):
    """train (the run config) and rstar/epsilon (the accountant) refuse q = 1 and q = 1.5 with the same words:
    (0, 1), Theorem 10's interval, and q = 1 named as Lemma 9's case, the audit's."""
    messages = {}
    for q in ("1", "1.5", "0"):
        for argv in (["train", "--dataset", "mnist", "--eps", "1", "--out", tmp_path / "r.json", "--q", q],
                     ["train", "--dataset", "mnist", "--eps", "inf", "--out", tmp_path / "r.json", "--q", q],
                     ["rstar", "--preset", "mnist", "--eps", "1", "--q", q],
                     ["epsilon", "--preset", "mnist", "--r", "0.3", "--q", q]):
            assert cli(argv) == 2
            line = one_error_line(capsys.readouterr().err)
            assert line.endswith(f"Found q={float(q)}."), line
            messages[line.rsplit(" Found", 1)[0]] = argv
    (rule,) = messages  # one message, whatever refused q
    assert rule == f"error: q must be {accountant.Q_RULE}." and "(0, 1)" in rule and "(0, 1]" not in rule
    assert "q = 1, the full batch, is Lemma 9's case" in rule and not (tmp_path / "r.json").exists()
    from dirdp.cli import build_parser

    assert "(0, 1)" in build_parser()._subparsers._group_actions[0].choices["train"].format_help()


def _locks(folder) -> list:
    return sorted(p.name for p in Path(folder).rglob("*.lock"))


def test_no_lock_file_outlives_a_finished_a_refused_or_a_failed_run(tiny_root, tmp_path, capsys):
    """<out>.lock exists only while a run holds it: not after the run finished, was refused (a bad checkpoint in
    its place, found under the lock) or failed (its data set missing)."""
    base = ["train", "--dataset", "mnist", "--eps", "1", "--steps", "4", "--q", "1/4", "--width", "0.0625",
            "--train-subset", "500", "--no-progress"]
    done = tmp_path / "done.json"
    assert cli([*base, "--data-root", tiny_root, "--out", done]) == 0
    result = json.loads(done.read_text())
    assert result["q"] == 0.25 and result["provenance"]["config"]["q"] == 0.25
    (tmp_path / "bad.json.ckpt.pt").write_bytes(b"")  # refused under the lock: not a readable checkpoint
    assert cli([*base, "--data-root", tiny_root, "--out", tmp_path / "bad.json"]) == 2
    assert "is not a readable checkpoint" in one_error_line(capsys.readouterr().err)
    (tmp_path / "empty").mkdir()
    assert cli([*base, "--data-root", tmp_path / "empty", "--out", tmp_path / "nodata.json"]) == 2
    assert "mnist is not under the data root" in capsys.readouterr().err
    assert cli(["train", "--dataset", "mnist", "--eps", "1", "--q", "1", "--out", tmp_path / "q1.json"]) == 2
    assert _locks(tmp_path) == [] and done.exists() and not (tmp_path / "nodata.json").exists()


def test_no_lock_file_outlives_an_interrupted_run(tiny_root, tmp_path, monkeypatch):
    from dirdp import loop, training

    def stop(*args, **kwargs):
        raise loop.Stopped(2)

    monkeypatch.setattr(training.loop, "run", stop)
    cfg = training.make_config("mnist", 1.0, steps=4, q=0.25, width=0.0625)
    with pytest.raises(training.Interrupted):
        training.train(cfg, tmp_path / "x.json", data_root=tiny_root, progress=False)
    assert _locks(tmp_path) == []


def test_the_lock_still_keeps_a_second_run_out_and_is_gone_after(tmp_path):
    from dirdp import runfile

    out = tmp_path / "x.json"
    held = runfile._lock(out)
    assert runfile.is_running(out) and (tmp_path / "x.json.lock").exists()
    with pytest.raises(ValueError, match="another process is training"):
        runfile._lock(out)
    assert runfile.is_running(out)  # the refused one left the holder's lock alone
    held.release()
    assert not runfile.is_running(out) and _locks(tmp_path) == []
    with runfile._lock(out):
        assert runfile.is_running(out)
    assert _locks(tmp_path) == []


def test_a_lock_won_on_a_file_its_holder_just_deleted_is_taken_again(tmp_path, monkeypatch):
    """The race of deleting the lock file: our open finds the holder's file, the holder ends (deletes and unlocks
    it), we lock the deleted file. That lock guards nothing (a third process would create a new file and lock
    it), so _lock takes the lock on the file at the path instead."""
    import builtins

    from dirdp import runfile

    out = tmp_path / "x.json"
    opened = []

    def open_then_holder_ends(path, *args, **kwargs):
        fh = builtins.open(path, *args, **kwargs)
        if not opened:
            Path(path).unlink()  # the holder's release, between our open and our flock
        opened.append(fh)
        return fh

    monkeypatch.setattr(runfile, "open", open_then_holder_ends, raising=False)
    held = runfile._lock(out)
    monkeypatch.undo()
    assert len(opened) == 2 and (tmp_path / "x.json.lock").exists() and runfile.is_running(out)
    held.release()
    assert _locks(tmp_path) == []


def _parsers():
    """(path, parser) of every command of python -m dirdp and of python -m workflow (path[0] names the program)."""
    import argparse

    from dirdp.cli import build_parser
    from workflow.cli import build_parser as workflow_parser

    def walk(parser, path):
        yield path, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, path + [name])

    return [*walk(build_parser(), ["dirdp"]), *walk(workflow_parser(), ["workflow"])]


@pytest.mark.parametrize("path,parser", _parsers(), ids=[" ".join(p) for p, _ in _parsers()])
def test_each_help_opens_with_a_sentence_and_an_example_and_shows_defaults(path, parser):
    import argparse
    import re

    text = parser.format_help()
    first = text.splitlines()[0]
    assert re.match(r"^[A-Z][^`]*\.$", first), first  # a sentence, not "usage: ..."
    assert "\nExample" in text and f"python -m {' '.join(path)}".strip() in text.split("usage:")[0]
    for markup in ("``", ":func:", ":mod:", ":class:", ":meth:"):
        assert markup not in text, markup
    flat = " ".join(text.split())
    for action in parser._actions:
        default = action.default
        if action.option_strings and default not in (None, False, argparse.SUPPRESS):
            shown = " ".join(map(str, default)) if isinstance(default, list) else str(default)
            assert f"default: {shown}" in flat or f"default {shown}" in flat, (action.option_strings, default)


def test_help_is_what_a_user_gets_with_exit_0():
    out = run("--help")
    assert out.returncode == 0 and out.stdout.startswith("Reproduce and audit") and "``" not in out.stdout
    out = run("train", "--help")
    assert out.returncode == 0 and out.stdout.startswith("Train one run")
    assert "[0.0625, 8]" in " ".join(out.stdout.split()) and "250/60000" in out.stdout


# ------------------------------------------------------------------ the library's command line is the library's

MOVED = ["index", "readme", "membership", "bench", "campaign"]  # once python -m dirdp's, now python -m workflow's


def test_the_library_s_commands_are_its_own():
    """python -m dirdp has the library's commands only (rstar, epsilon, train); the names that moved are not among
    them, and each is a command of python -m workflow."""
    import argparse

    from dirdp import cli
    from workflow.cli import build_parser as workflow_parser

    def commands(parser):
        return [name for a in parser._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices]

    assert commands(cli.build_parser()) == ["rstar", "epsilon", "train"]
    assert list(cli.MOVED) == MOVED and set(MOVED) <= set(commands(workflow_parser()))


@pytest.mark.parametrize("name", MOVED)
def test_a_moved_command_says_where_it_went_in_one_line(name, tmp_path):
    """``python -m dirdp <name> ...`` for a command that moved to the workflow: one line on standard error naming
    ``python -m workflow <name>``, exit status 2, no usage block, no traceback, nothing on standard output; whatever
    follows the name (--help included) and wherever it runs (here: a folder that is no checkout), nothing is run."""
    out = run(name, "--help", "--results", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 2 and out.stdout == "", out
    assert out.stderr == (f"error: 'python -m dirdp {name}' moved: run 'python -m workflow {name}' from a checkout of "
                          "the repository\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", MOVED)
def test_a_moved_command_in_process_is_the_same_line(name, capsys):
    assert cli([name]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and one_error_line(captured.err) == (
        f"error: 'python -m dirdp {name}' moved: run 'python -m workflow {name}' from a checkout of the repository")


def test_the_help_s_minimum_width_is_training_s():
    from dirdp import cli, training

    assert cli.MIN_WIDTH == training.MIN_WIDTH
