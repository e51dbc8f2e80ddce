"""Property: whatever arguments ``python -m dirdp <sub>`` (or, for a command of the workflow, ``python -m workflow
<sub>``) gets, drawn from its real flag names and from
numbers (negative, zero, huge, nan, inf) and junk strings, it returns 0 or 2 (argparse's own exit counts)
and never raises. The long work behind each command (training, benchmarking, the campaign) is replaced
by a stub, so only the argument handling and the validation before it run; every path it may write to
lies in a temporary folder."""

import argparse

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dirdp.__main__ import build_parser, main
from workflow.__main__ import main as workflow_main
from workflow.cli import build_parser as workflow_parser


class Reached(Exception):
    """The stub of the long work was called: the arguments passed every check before it."""


def _flags(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {opt: a for a in parser._actions for opt in a.option_strings if opt.startswith("--") and opt != "--help"}


def _subparser(parser, *path):
    for name in path:
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[name]
    return parser


PARSER, WORKFLOW_PARSER = build_parser(), workflow_parser()
WORKFLOW_COMMANDS = {name for a in WORKFLOW_PARSER._actions if isinstance(a, argparse._SubParsersAction)
                     for name in a.choices}  # python -m workflow's (none of them python -m dirdp's)
COMMANDS = {"rstar": ("rstar",), "epsilon": ("epsilon",), "train": ("train",), "index": ("index",),
            "bench": ("bench",), "campaign run": ("campaign", "run"), "campaign status": ("campaign", "status")}
FLAGS = {name: _flags(_subparser(WORKFLOW_PARSER if path[0] in WORKFLOW_COMMANDS else PARSER, *path))
         for name, path in COMMANDS.items()}
PATH_FLAGS = {"--out", "--data-root", "--results", "--json-out", "--pack", "--workdir", "--config"}

NUMBERS = st.one_of(
    st.integers(-3, 3), st.integers(-10**30, 10**30), st.sampled_from([64, 10_001, 100_000]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0625, 0.25, 1e-300, 1e300, 0.999999]),
).map(str)
WORDS = st.one_of(
    st.sampled_from(["inf", "-inf", "nan", "Infinity", "", " ", "mnist", "cifar10", "cpu", "cuda", "cuda:7", "foo",
                     "alg1", "dpsgd", "latent", "resnet9", "inception", "papernot_cnn", "sgd", "adam", "cpu", "gpu",
                     "paper", "smoke", "nonsense", "fp32", "bf16+cl", "1e309", "0x10", "1_000", "--", "-1"]),
    st.text(max_size=12),
)


def _value(action: argparse.Action, tmp) -> st.SearchStrategy:
    if action.nargs == 0:  # store_true / store_const
        return st.just(None)
    if "--max-order" in action.option_strings:  # a valid order as large as 10,000 takes ~20 s and 3 GiB
        return st.one_of(st.sampled_from([-1, 0, 1, 2, 3, 64, 10_001, 10**9]).map(str), WORDS)
    if set(action.option_strings) & PATH_FLAGS:
        return st.sampled_from([tmp / "out" / "x.json", tmp / "empty", tmp / "a file" / "x.json", tmp / "no" / "dir",
                                tmp]).map(str)
    pool = [NUMBERS, WORDS]
    if action.choices:
        pool.append(st.sampled_from(sorted(map(str, action.choices))))
    values = st.one_of(*pool)
    return st.lists(values, min_size=1, max_size=3) if action.nargs in ("+", "*") else values


def _argv(command: str, tmp) -> st.SearchStrategy:
    flags = FLAGS[command]
    required = {"rstar": ["--preset", "mnist", "--eps", "1", "--max-order", "64"],
                "epsilon": ["--preset", "mnist", "--r", "0.3", "--max-order", "64"],
                "train": ["--dataset", "mnist", "--eps", "1", "--out", str(tmp / "out" / "x.json"),
                          "--data-root", str(tmp / "empty")],
                "index": ["--profile", "cpu", "--results", str(tmp / "empty"), "--out", str(tmp / "index.md")],
                "bench": ["--models", "resnet9", "--width", "0.0625"],
                "campaign run": ["--smoke", "--workdir", str(tmp / "empty")],
                "campaign status": ["--workdir", str(tmp / "empty")]}[command]

    @st.composite
    def draw(draw):
        argv = list(COMMANDS[command]) + (required if draw(st.booleans()) or command == "train" else [])
        for flag in draw(st.lists(st.sampled_from(sorted(flags)), max_size=5)):
            value = draw(_value(flags[flag], tmp))
            if value is None:
                argv.append(flag)
            elif isinstance(value, list):
                argv += [flag, *value]
            else:  # --flag=value, so that a value starting with "-" is a value
                argv.append(f"{flag}={value}")
        return argv

    return draw()


@pytest.fixture
def stubbed(monkeypatch, tmp_path):
    """Every long or outward-reaching action replaced: training past its start, benchmarks, the campaign,
    torch's thread count (global to this process)."""
    import torch

    import dirdp.training
    from workflow.bench import accounting as bench_accounting
    from workflow.bench import campaign as bench_campaign
    from workflow.bench import core as bench_core
    from workflow.bench import sweep as bench_sweep
    from workflow.campaign import plan as campaign_plan
    from workflow.campaign import run as campaign_run

    def reached(*args, **kwargs):
        raise Reached

    monkeypatch.setattr(dirdp.training, "_train", reached)  # train()'s own start (the --out check) still runs
    monkeypatch.setattr(bench_core, "main", reached)
    monkeypatch.setattr(bench_campaign, "campaign_main", reached)
    monkeypatch.setattr(bench_accounting, "core_bench", reached)  # bench --core: seconds of r* solves and losses
    monkeypatch.setattr(bench_sweep, "sweep", reached)  # bench --sweep: minutes of interleaved steps
    monkeypatch.setattr(campaign_run, "run_campaign", reached)
    monkeypatch.setattr(campaign_plan, "status", reached)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)
    (tmp_path / "empty").mkdir()
    (tmp_path / "a file").write_text("")
    return tmp_path


def _exit_status(argv) -> int | str:
    try:
        return (workflow_main if argv[0] in WORKFLOW_COMMANDS else main)(argv)
    except SystemExit as stop:  # argparse: --help (0) or a usage error (2)
        return 0 if stop.code is None else stop.code
    except Reached:
        return 0


@pytest.mark.parametrize("command", list(COMMANDS))
def test_any_arguments_give_0_or_2_and_no_exception(command, stubbed, capsys):
    examples = {"rstar": 25, "epsilon": 15, "train": 30, "index": 10, "bench": 10, "campaign run": 10,
                "campaign status": 5}[command]

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(argv=_argv(command, stubbed))
    def check(argv):
        status = _exit_status(argv)
        captured = capsys.readouterr()
        assert status in (0, 2), (argv, status, captured.err[-2000:])
        assert "Traceback" not in captured.err, (argv, captured.err[-2000:])

    check()
