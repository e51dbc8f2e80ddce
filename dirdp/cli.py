"""The argument parser of python -m dirdp: its commands, flags, defaults and help. dirdp/__main__.py runs the
commands."""

from __future__ import annotations

import argparse
from fractions import Fraction

from dirdp import accountant, methods
from dirdp.presets import PRESETS
from dirdp.protocol import parse_eps

PROG = "python -m dirdp"
MIN_WIDTH = 1 / 16  # dirdp.training.MIN_WIDTH, without importing torch for --help (tests/test_cli.py: they agree)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written (their line breaks kept), and each flag's default appended to its help
    where the help does not already say it (nothing for a flag whose default is "not given" or off)."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("default" in text or default is None or default is False or default is argparse.SUPPRESS
                or not action.option_strings):
            return text
        shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})"


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake told in one line: ``error: <what is wrong> (see: <prog> --help)`` on standard error
    and exit status 2, the usage only with --help. Its --help opens with the description (one sentence on what the
    command does, and an example), then the usage and the flags. Every sub-command's parser is one too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        message = " ".join(str(message).split())  # one line, whatever argparse wrote
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_text(self.description)
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        for group in self._action_groups:
            formatter.start_section(group.title)
            formatter.add_text(group.description)
            formatter.add_arguments(group._group_actions)
            formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()


def _describe(what: str, *examples: str) -> str:
    """A command's description: one plain sentence on what it does, then its examples."""
    lines = "\n".join(f"  {PROG} {e}" for e in examples)
    return f"{what}\n\nExample{'s' if len(examples) > 1 else ''}:\n{lines}"


def _rate(text: str) -> float:
    """A sampling rate as a number (0.004) or a fraction (250/60000, as the paper writes it); the range is
    checked where the rate is used (Theorem 10 needs 0 < q < 1)."""
    try:
        if "/" in text:
            num, den = text.split("/")
            return float(Fraction(num.strip()) / Fraction(den.strip()))
        return float(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"a rate is a number or a fraction such as 250/60000. Found {text!r}.") from None


Q_HELP = ("Poisson sampling rate q in (0, 1), a number or a fraction such as 250/60000 (default: the preset's). "
          "Theorem 10 needs q < 1; q = 1, the full batch, is Lemma 9's case, which only the audit uses")


def _add_protocol_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=sorted(PRESETS),
                   help="take (alpha, q, T, delta) from a data set's protocol of Section 4.1.2; each flag below "
                        "overrides its value (default: none, then --alpha, --q and --steps are needed)")
    p.add_argument("--alpha", type=float, help="Dirichlet offset alpha > 0 (default: the preset's, 3)")
    p.add_argument("--q", type=_rate, help=Q_HELP)
    p.add_argument("--steps", type=int, help="number of training steps T (default: the preset's)")
    p.add_argument("--delta", type=float, help="DP delta in (0, 1) (default: the preset's, 1e-5)")
    p.add_argument("--max-order", type=int, default=accountant.DEFAULT_MAX_ORDER,
                   help=f"largest RDP order lambda searched, at most {accountant.MAX_MAX_ORDER}")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _eps(text: str) -> float:
    try:
        return parse_eps(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_train_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, choices=sorted(PRESETS),
                   help="data set; its preset sets the protocol (q, T, alpha, delta, lr, model)")
    p.add_argument("--eps", type=_eps, required=True, help="target epsilon > 0, or 'inf' for the non-private column")
    p.add_argument("--seed", type=int, default=0, help="seed of the model's initialisation, the sampler and the noise")
    p.add_argument("--out", required=True, help="result JSON (checkpoint beside it, as <out>.ckpt.pt)")
    p.add_argument("--method", default=methods.DEFAULT, choices=list(methods.NAMES), help=methods.CLI_HELP)
    g = p.add_argument_group("overrides of the paper's protocol (r* is recomputed for what actually runs)")
    g.add_argument("--steps", type=int, help="T (default: the preset's)")
    g.add_argument("--q", type=_rate, help=Q_HELP)
    g.add_argument("--alpha", type=float, help="Dirichlet offset alpha (default: the preset's, 3)")
    g.add_argument("--delta", type=float, help="DP delta (default: the preset's, 1e-5)")
    g.add_argument("--lr", type=float, help="learning rate (default: the preset's; 0.001 with Adam)")
    g.add_argument("--optimizer", choices=["sgd", "adam"], help="default: sgd (the method's own where it has one)")
    g.add_argument("--model", help="inception, resnet18, resnet9 or papernot_cnn (default: the preset's)")
    g.add_argument("--max-grad-norm", type=float, help="DP-SGD clipping norm C (default: 1.0)")
    g.add_argument("--width", type=float,
                   help=f"channel-width multiplier in [{MIN_WIDTH:g}, 8]: 1 is the paper's model, {MIN_WIDTH:g} (1/16) "
                        "the narrowest, where every layer keeps at least one channel (default: 1)")
    g.add_argument("--norm", choices=["batch", "group"],
                   help="normalisation layers: batch (BatchNorm, the paper's models; default) or group (GroupNorm: no "
                        "example's output depends on another's; DP-SGD always uses it)")
    g.add_argument("--train-subset", type=int, help="train on a seeded random subset of this size (default: all)")
    g.add_argument("--no-augment", dest="augment", action="store_const", const=False,
                   help="no CIFAR-10 augmentation (default: augment CIFAR-10 only)")
    d = p.add_argument_group("execution")
    d.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    d.add_argument("--bf16", action="store_true", help="bf16 autocast for the model (the mechanism stays float32)")
    d.add_argument("--channels-last", action="store_true", help="channels_last memory format (faster convolutions on GPU)")
    d.add_argument("--eval-every", type=int, default=500, help="test accuracy every N steps, and at the last (default 500)")
    d.add_argument("--log-every", type=int, default=50, help="mean training loss every N steps (default 50)")
    d.add_argument("--checkpoint-every", type=int, default=200,
                   help="write <out>.ckpt.pt every N steps (default 200); a rerun resumes from it")
    d.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's choice)")
    d.add_argument("--data-root", help="data folder (default: $DIRDP_DATA, else ./data); a data set missing there is "
                                       "downloaded where the network allows")
    d.add_argument("--no-progress", action="store_true", help="no progress bar (log lines only)")
    d.add_argument("--force", action="store_true", help="run again even if --out exists")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description=_describe(
        "Reproduce and audit the paper's differentially private training: calibrate r*, certify epsilon, train "
        "one run, benchmark, index the results and run a campaign; each command has its own --help.",
        "rstar --preset mnist --eps 1",
        "train --dataset mnist --eps 1 --steps 4 --width 0.0625 --train-subset 500 --out runs/try.json"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="command",
                                title="commands (python -m dirdp <command> --help for each)")

    def add(name: str, help: str, what: str, *examples: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=_describe(what, *examples))

    p_r = add("rstar", "r* of Eq. (1) for a target epsilon",
              "Print r*, the largest Dirichlet scale r for which Theorem 10 certifies a target epsilon (Eq. (1)).",
              "rstar --preset mnist --eps 1", "rstar --eps 1 --alpha 3 --q 250/60000 --steps 9600")
    p_r.add_argument("--eps", type=float, required=True, help="target epsilon > 0")
    _add_protocol_flags(p_r)
    p_e = add("epsilon", "epsilon certified by Theorem 10 for a given r",
              "Print the epsilon that Theorem 10 certifies for a given Dirichlet scale r, and its RDP order.",
              "epsilon --preset mnist --r 0.277")
    p_e.add_argument("--r", type=float, required=True, help="Dirichlet scale r in (0, alpha)")
    _add_protocol_flags(p_e)
    p_t = add("train", "one run of Algorithm 1 (a table cell), with checkpoints and provenance",
              "Train one run (one table cell: Algorithm 1 or a baseline) and write its result JSON, with checkpoints "
              "and provenance; rerunning the same command resumes it.",
              "train --dataset mnist --eps 1 --steps 4 --width 0.0625 --train-subset 500 --out runs/try.json")
    _add_train_flags(p_t)
    p_i = add("index", "write the results index: every paper object, its command, ours vs paper",
              "Write a profile's results index: every paper object, the command that makes it, and our numbers "
              "beside the paper's.", "index --profile cpu")
    p_i.add_argument("--results", default="results", help="results folder: the one holding every profile's "
                                                          "folder, or a profile's own")
    p_i.add_argument("--profile", required=True, help="the profile the DAG ran (config/<profile>.yaml)")
    p_i.add_argument("--out", help="index to write (default: the profile's own, <results>/<profile>/README.md; "
                                   "writing it also refreshes <results>/README.md, the index of the profiles)")
    p_m = add("readme", "rewrite the generated blocks of the README and docs/ from a profile's result files; --check "
                        "only compares",
              "Rewrite the generated blocks (the result numbers) of the README and of every docs/*.md beside it from a "
              "profile's result files, or with --check only compare them.", "readme --check", "readme --profile cpu")
    p_m.add_argument("--readme", default="README.md",
                     help="README whose generated blocks are rewritten, with those of the docs/*.md beside it")
    p_m.add_argument("--results", default="results", help="results folder")
    p_m.add_argument("--profile", default="cpu", help="the profile whose committed results the README cites")
    p_m.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each block that differs")
    p_ms = add("membership", "membership inference on released models: each row kept in a record beside its run",
               "Audit released models by membership inference (their own training records against as many test "
               "records, the logit margin, beside the untrained model's null) and keep each row in a record beside "
               "its run (RUN.json.membership), which the DAG's audit of the released models reads back where the "
               "weights are not in git. Needs each run's weights (RUN.model.pt); a record already made for the same "
               "weights, n, seed and code is kept.",
               "membership results/runs/cpu/fashionmnist/alg1_w1_bf16_eps2_seed0.json")
    p_ms.add_argument("runs", nargs="+", metavar="RUN.json", help="result files of released models (weights beside)")
    p_ms.add_argument("--n", type=int, default=None,
                      help="training records, and as many test records, per model (default: the DAG's, 10,000)")
    p_ms.add_argument("--seed", type=int, default=0, help="seed of the record draw (default 0, the DAG's)")
    p_ms.add_argument("--data-root", help="data folder (default: $DIRDP_DATA, else ./data)")
    p_b = add("bench", "per-step time of non-private training vs Algorithm 1, per model",
              "Time one training step of non-private training and of Algorithm 1 (optionally DP-SGD) for each model.",
              "bench --models resnet9 --width 0.25 --reps 3")
    p_b.add_argument("--models", nargs="+", choices=["inception", "resnet18", "resnet9", "papernot_cnn"],
                     help="default: inception resnet18 resnet9 (with --campaign: and papernot_cnn)")
    p_b.add_argument("--width", type=float, default=1.0, help="channel-width multiplier (1: the paper's models)")
    p_b.add_argument("--reps", type=int, default=5,
                     help="timed steps per model and method, after 2 warm-up steps; the median is reported")
    p_b.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p_b.add_argument("--bf16", action="store_true", help="bf16 autocast for the model (the mechanism stays float32)")
    p_b.add_argument("--channels-last", action="store_true", help="channels_last memory format")
    p_b.add_argument("--baselines", action="store_true",
                     help="also DP-SGD (Opacus) vs Algorithm 1 on the same GroupNorm model, and the tempered-sigmoid CNN")
    p_b.add_argument("--threads", type=int,
                     help="CPU threads for torch (default: torch's choice; the cpu profile's runs use 1)")
    p_b.add_argument("--json", action="store_true", help="also print the rows as one JSON list")
    p_b.add_argument("--campaign", action="store_true",
                     help="the GPU campaign's table: inception and resnet18 (or --models), non-private / Algorithm 1 / "
                          "DP-SGD, fp32 and bf16 + channels_last, peak memory, and the projected time of a Table-1 "
                          "cell and of the paper profile")
    p_b.add_argument("--json-out", help="write the rows (with --campaign: and the projections) to this JSON file, with provenance")
    p_b.add_argument("--precisions", nargs="+", default=["fp32", "bf16+cl"], choices=["fp32", "fp32+cl", "bf16", "bf16+cl"],
                     help="with --campaign: fp32 and/or bf16 autocast, each optionally channels_last (+cl)")
    p_b.add_argument("--sweep", action="store_true",
                     help="the CPU precision sweep: full-width and 0.25x Inception, Algorithm 1 and non-private, fp32 / "
                          "bf16 / bf16 + channels_last, at each --sweep-threads, interleaved in one process; this "
                          "machine's fp32 and bf16 matmul peaks, each step's GFLOP/s and fraction of its peak, the load; "
                          "a --json-out in results/ is refused when the machine was busy")
    p_b.add_argument("--sweep-threads", type=int, nargs="+", default=[1, 2], help="with --sweep: thread counts (default 1 2)")
    p_b.add_argument("--batch", type=int,
                     help="with --campaign: time this batch size instead of the paper's (the campaign's --smoke mode)")
    p_b.add_argument("--core", action="store_true",
                     help="the core without a model: one r* solve, the Table 7 grid, the mechanism's loss beside "
                          "cross-entropy (their own repetitions; one thread unless --threads)")
    _add_campaign_parser(sub)
    return parser


def _add_campaign_parser(sub) -> None:
    p = sub.add_parser("campaign", help="train a profile's runs in priority order, K at a time, inside a budget "
                                        "(the GPU campaign; the CPU evidence campaign)",
                       description=_describe("Train a profile's runs in priority order, K at a time, inside a time "
                                             "budget, and say where each run stands.",
                                             "campaign status --config config/cpu.yaml",
                                             "campaign run --smoke"))
    act = p.add_subparsers(dest="action", required=True, metavar="action",
                           title="actions (python -m dirdp campaign <action> --help for each)")
    r = act.add_parser("run", help="test lane, benchmark, then the queue K at a time; pack what it made",
                       description=_describe("Run a profile's campaign: the CUDA test lane, the benchmark, then its "
                                             "queue of runs K at a time, and pack what it made.",
                                             "campaign run --config config/gpu.yaml --budget 540 --pack out/",
                                             "campaign run --smoke"))
    r.add_argument("--config", default="config/gpu.yaml", help="profile whose campaign queue runs")
    r.add_argument("--budget", type=float, default=540,
                   help="wall-clock seconds for everything, packing included (0: no limit). Runs the budget cuts "
                        "off leave their checkpoint; the next campaign run resumes them")
    r.add_argument("--k", type=int, help="runs side by side (default: from the benchmark's memory; CPU: cores)")
    r.add_argument("--pack", metavar="DIR", help="pack results, checkpoints, logs and the benchmark into DIR "
                                                 "(at most --pack-parts files of --pack-part-mib MiB each); "
                                                 "campaign unpack DIR puts them back")
    r.add_argument("--pack-part-mib", type=float, default=15.5, metavar="MIB",
                   help="with --pack: the most one file of the pack may weigh, in MiB (default 15.5; at least 1)")
    r.add_argument("--pack-parts", type=int, default=4, metavar="N",
                   help="with --pack: the most files the pack may have (default 4); what does not fit is left out "
                        "and listed")
    r.add_argument("--smoke", action="store_true",
                   help="the same machinery on CPU: 4-step runs, K = 2, in a temporary folder (or --workdir)")
    r.add_argument("--workdir", help="folder holding results/ (default: the repository)")
    r.add_argument("--max-runs", type=int, help="only the first N runs of the queue (default: all)")
    r.add_argument("--no-tests", action="store_true", help="skip the CUDA test lane")
    r.add_argument("--no-bench", action="store_true", help="skip the benchmark")
    r.add_argument("--bench-reps", type=int, default=10, help="the benchmark's timed steps")
    r.add_argument("--no-fit", dest="fit", action="store_false", default=None,
                   help="with a budget, start the queue K at a time anyway (default: only the runs the benchmark's "
                        "steps/s says can finish in the budget, unless --k is given)")
    r.add_argument("--require-clean", action="store_true",
                   help="start a run only while the code equals its commit (the CPU campaign: no '+dirty' results)")
    s = act.add_parser("status", help="where each run of a profile's campaign stands",
                       description=_describe("Show where each run of a profile's campaign stands: done, running, "
                                             "stopped or queued.", "campaign status --config config/cpu.yaml"))
    s.add_argument("--config", default="config/cpu.yaml", help="profile whose campaign queue is shown")
    s.add_argument("--workdir", help="folder holding results/ (default: the repository)")
    u = act.add_parser("unpack", help="put a campaign pack (DIR/campaign.tar.gz.00, ...) back into the repository",
                       description=_describe("Put a campaign pack (DIR/campaign.tar.gz.00, ...) back into the "
                                             "repository.", "campaign unpack out/"))
    u.add_argument("src", metavar="DIR", help="folder holding the pack")
    u.add_argument("--into", help="repository root (default: this one)")
    u.add_argument("--allow-smoke", action="store_true",
                   help="unpack a smoke pack (campaign run --smoke: 4-step CPU runs) too; refused without it")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """build_parser().parse_args(argv), also refusing --flag=-- for a one-value flag (argparse of Python 3.11
    turns it into an empty list, which no check downstream expects)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    stack, single = [parser], {}
    while stack:
        for action in stack.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack += action.choices.values()
            elif action.option_strings and action.nargs is None:
                single.setdefault(action.dest, action.option_strings[-1])
    for dest, value in vars(args).items():
        if isinstance(value, list) and dest in single:
            parser.error(f"argument {single[dest]}: expected one argument")
    return args
