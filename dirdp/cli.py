"""The argument parser of python -m dirdp: its commands (rstar, epsilon, train), flags, defaults and help.
dirdp/__main__.py runs the commands. The names that once were commands of the workflow (:data:`MOVED`: index, readme,
membership, bench, campaign) are refused in one line that says where they went (``python -m workflow``, in a checkout
of the repository); the library runs none of them. Both command lines (this and ``python -m workflow``) share its
:class:`Parser`, :func:`run_main` (a missing optional package: one line), :func:`below_one` and :func:`to_json`."""

from __future__ import annotations

import argparse
import json
import sys
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


def describe(what: str, *examples: str, prog: str = PROG) -> str:
    """A command's description: one plain sentence on what it does, then its examples."""
    lines = "\n".join(f"  {prog} {e}" for e in examples)
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
    g.add_argument("--conv-bias", action="store_true",
                   help="a bias on every convolution, drawn as the paper's footnote 2 says (default: bias-free "
                        "convolutions, each followed by a normalisation layer)")
    g.add_argument("--train-subset", type=int, help="train on a seeded random subset of this size (default: all)")
    a = p.add_argument_group("the one-run audit (Steinke, Nasr and Jagielski 2023)")
    a.add_argument("--canaries", type=int, default=0,
                   help="m canaries (8-bit images of the other grayscale data set, random labels), each added to the "
                        "training set with probability 1/2; the result JSON gets their white- and black-box scores "
                        "(default: 0, none)")
    a.add_argument("--canary-seed", type=int, default=0,
                   help="which canaries, their labels and which are trained on (kept apart from --seed, so that two "
                        "methods can be audited on the same canaries)")
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
    parser = Parser(prog=PROG, description=describe(
        "Reproduce and audit the paper's differentially private training: calibrate r*, certify epsilon, train "
        "one run; the workflow's commands (benchmark, index the results, run a campaign) are python -m workflow's, "
        "run from a checkout of the repository. Each command has its own --help.",
        "rstar --preset mnist --eps 1",
        "train --dataset mnist --eps 1 --steps 4 --width 0.0625 --train-subset 500 --out runs/try.json"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="command",
                                title="commands (python -m dirdp <command> --help for each)")

    def add(name: str, help: str, what: str, *examples: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=describe(what, *examples))

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
    return parser


# the names that were commands of python -m dirdp until they moved to the workflow (python -m workflow <command>, the
# package workflow/ beside the Snakefile in a checkout of the repository): python -m dirdp <name> says so in one line
MOVED = ("index", "readme", "membership", "bench", "campaign")


def moved(name: str) -> str:
    """The one line (without ``error: ``) that ``python -m dirdp <name>`` prints for a name in :data:`MOVED`."""
    return f"'{PROG} {name}' moved: run 'python -m workflow {name}' from a checkout of the repository"


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """parser.parse_args(argv), also refusing --flag=-- for a one-value flag (argparse of Python 3.11 turns it into an
    empty list, which no check downstream expects)."""
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


def run_main(main, argv: list[str] | None) -> int:
    """``main(argv)``, where a package of an extra that is not installed (:func:`dirdp.extras.missing`) is one line on
    standard error and exit status 2, not a traceback."""
    try:
        return main(argv)
    except ModuleNotFoundError as err:
        from dirdp.extras import missing

        if (line := missing(err)) is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 2


def below_one(args: argparse.Namespace, *names: str) -> str | None:
    """The line for the first flag of ``names`` (as ``args`` names them) given a value below 1; None if none is."""
    for name in names:
        if (value := getattr(args, name)) is not None and value < 1:
            return f"--{name.replace('_', '-')} must be at least 1. Found {value}."
    return None


def to_json(obj) -> str:
    """``obj`` as strict JSON: a non-finite float is written as the string "inf", "-inf" or "nan" (JSON has no
    Infinity or NaN; :func:`dirdp.protocol.parse_eps` reads those strings back)."""
    from dirdp.provenance import jsonable

    return json.dumps(jsonable(obj), allow_nan=False)
