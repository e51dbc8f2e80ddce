"""The argument parser of ``python -m dirdp`` (flags, defaults, help); :mod:`dirdp.__main__` runs the commands."""

from __future__ import annotations

import argparse

from dirdp import accountant, methods
from dirdp.presets import PRESETS
from dirdp.protocol import parse_eps


def _add_protocol_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=sorted(PRESETS), help="protocol of Section 4.1.2 (q, T, alpha=3, delta=1e-5)")
    p.add_argument("--alpha", type=float, help="Dirichlet offset alpha (preset: 3)")
    p.add_argument("--q", type=float, help="Poisson sampling rate q")
    p.add_argument("--steps", type=int, help="number of training steps T")
    p.add_argument("--delta", type=float, help="DP delta (default 1e-5)")
    p.add_argument("--max-order", type=int, default=accountant.DEFAULT_MAX_ORDER, help="largest RDP order searched")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _eps(text: str) -> float:
    try:
        return parse_eps(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_train_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, choices=sorted(PRESETS),
                   help="data set; its preset sets the protocol (q, T, alpha, delta, lr, model)")
    p.add_argument("--eps", type=_eps, required=True, help="target epsilon, or 'inf' for the non-private column")
    p.add_argument("--seed", type=int, default=0, help="seed of the model's initialisation, the sampler and the noise (default 0)")
    p.add_argument("--out", required=True, help="result JSON (checkpoint beside it, as <out>.ckpt.pt)")
    p.add_argument("--method", default="alg1", choices=list(methods.NAMES), help=methods.CLI_HELP)
    g = p.add_argument_group("overrides of the paper's protocol (r* is recomputed for what actually runs)")
    g.add_argument("--steps", type=int, help="T")
    g.add_argument("--q", type=float, help="Poisson sampling rate")
    g.add_argument("--alpha", type=float, help="Dirichlet offset alpha (preset: 3)")
    g.add_argument("--delta", type=float, help="DP delta (preset: 1e-5)")
    g.add_argument("--lr", type=float, help="learning rate (preset's; 0.001 with Adam)")
    g.add_argument("--optimizer", choices=["sgd", "adam"], help="default: sgd (the method's own where it has one)")
    g.add_argument("--model", help="inception, resnet18, resnet9 or papernot_cnn")
    g.add_argument("--max-grad-norm", type=float, help="DP-SGD clipping norm C (default 1.0)")
    g.add_argument("--width", type=float, help="channel-width multiplier (1 = the paper's model)")
    g.add_argument("--norm", choices=["batch", "group"],
                   help="normalisation layers: batch (BatchNorm, the paper's models; default) or group (GroupNorm: no "
                        "example's output depends on another's; DP-SGD always uses it)")
    g.add_argument("--train-subset", type=int, help="train on a seeded random subset of this size")
    g.add_argument("--no-augment", dest="augment", action="store_const", const=False, help="no CIFAR-10 augmentation")
    d = p.add_argument_group("execution")
    d.add_argument("--device", default="cpu", help="cpu or cuda")
    d.add_argument("--bf16", action="store_true", help="bf16 autocast for the model (the mechanism stays float32)")
    d.add_argument("--channels-last", action="store_true", help="channels_last memory format (faster convolutions on GPU)")
    d.add_argument("--eval-every", type=int, default=500, help="test accuracy every N steps, and at the last (default 500)")
    d.add_argument("--log-every", type=int, default=50, help="mean training loss every N steps (default 50)")
    d.add_argument("--checkpoint-every", type=int, default=200,
                   help="write <out>.ckpt.pt every N steps (default 200); a rerun resumes from it")
    d.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's choice)")
    d.add_argument("--data-root", help="data folder (default: $DIRDP_DATA, else ./data)")
    d.add_argument("--no-progress", action="store_true", help="no progress bar (log lines only)")
    d.add_argument("--force", action="store_true", help="run again even if --out exists")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dirdp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p_r = sub.add_parser("rstar", help="r* of Eq. (1) for a target epsilon")
    p_r.add_argument("--eps", type=float, required=True, help="target epsilon")
    _add_protocol_flags(p_r)
    p_e = sub.add_parser("epsilon", help="epsilon certified by Theorem 10 for a given r")
    p_e.add_argument("--r", type=float, required=True, help="Dirichlet scale r in (0, alpha)")
    _add_protocol_flags(p_e)
    p_t = sub.add_parser("train", help="one run of Algorithm 1 (a table cell), with checkpoints and provenance")
    _add_train_flags(p_t)
    p_i = sub.add_parser("index", help="write results/README.md: every paper object, its command, ours vs paper")
    p_i.add_argument("--results", default="results", help="results folder (default: results)")
    p_i.add_argument("--profile", required=True, help="the profile the DAG ran (config/<profile>.yaml)")
    p_i.add_argument("--out", default="results/README.md", help="index to write (default: results/README.md)")
    p_m = sub.add_parser("readme", help="rewrite the README's generated blocks (its result numbers) from a "
                                        "profile's result files; --check only compares")
    p_m.add_argument("--readme", default="README.md", help="README whose generated blocks are rewritten (default: README.md)")
    p_m.add_argument("--results", default="results", help="results folder (default: results)")
    p_m.add_argument("--profile", default="cpu", help="the profile whose committed results the README cites")
    p_m.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each block that differs")
    p_b = sub.add_parser("bench", help="per-step time of non-private training vs Algorithm 1, per model")
    p_b.add_argument("--models", nargs="+", choices=["inception", "resnet18", "resnet9", "papernot_cnn"],
                     help="default: inception resnet18 resnet9 (with --campaign: and papernot_cnn)")
    p_b.add_argument("--width", type=float, default=1.0, help="channel-width multiplier (default 1, the paper's models)")
    p_b.add_argument("--reps", type=int, default=5, help="timed steps per model and method, after 2 warm-up steps; the median is reported (default 5)")
    p_b.add_argument("--device", default="cpu", help="cpu or cuda")
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
    p_b.add_argument("--batch", type=int,
                     help="with --campaign: time this batch size instead of the paper's (the campaign's --smoke mode)")
    _add_campaign_parser(sub)
    return parser


def _add_campaign_parser(sub) -> None:
    p = sub.add_parser("campaign", help="train a profile's runs in priority order, K at a time, inside a budget "
                                        "(the GPU campaign; the CPU evidence campaign)")
    act = p.add_subparsers(dest="action", required=True)
    r = act.add_parser("run", help="test lane, benchmark, then the queue K at a time; pack what it made")
    r.add_argument("--config", default="config/gpu.yaml", help="profile whose campaign queue runs (config/gpu.yaml)")
    r.add_argument("--budget", type=float, default=540,
                   help="wall-clock seconds for everything, packing included (0: no limit). Runs the budget cuts "
                        "off leave their checkpoint; the next call resumes them")
    r.add_argument("--k", type=int, help="runs side by side (default: from the benchmark's memory; CPU: cores)")
    r.add_argument("--pack", metavar="DIR", help="pack results, checkpoints, logs and the benchmark into DIR "
                                                 "(at most 4 files of 15.5 MiB); `campaign unpack DIR` puts them back")
    r.add_argument("--smoke", action="store_true",
                   help="the same machinery on CPU: 4-step runs, K = 2, in a temporary folder (or --workdir)")
    r.add_argument("--workdir", help="folder holding results/ (default: the repository)")
    r.add_argument("--max-runs", type=int, help="only the first N runs of the queue")
    r.add_argument("--no-tests", action="store_true", help="skip the CUDA test lane")
    r.add_argument("--no-bench", action="store_true", help="skip the benchmark")
    r.add_argument("--bench-reps", type=int, default=10, help="the benchmark's timed steps (default 10)")
    r.add_argument("--no-fit", dest="fit", action="store_false", default=None,
                   help="with a budget, start the queue K at a time anyway (default: only the runs the benchmark's "
                        "steps/s says can finish in the budget, unless --k is given)")
    r.add_argument("--require-clean", action="store_true",
                   help="start a run only while the code equals its commit (the CPU campaign: no '+dirty' results)")
    s = act.add_parser("status", help="where each run of a profile's campaign stands")
    s.add_argument("--config", default="config/cpu.yaml", help="profile whose campaign queue is shown (config/cpu.yaml)")
    s.add_argument("--workdir", help="folder holding results/ (default: the repository)")
    u = act.add_parser("unpack", help="put a campaign pack (DIR/campaign.tar.gz.00, ...) back into the repository")
    u.add_argument("src", metavar="DIR", help="folder holding the pack")
    u.add_argument("--into", help="repository root (default: this one)")
    u.add_argument("--allow-smoke", action="store_true",
                   help="unpack a smoke pack (campaign run --smoke: 4-step CPU runs) too; refused without it")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """``build_parser().parse_args(argv)``, also refusing ``--flag=--`` for a one-value flag (argparse of
    Python 3.11 turns it into an empty list, which no check downstream expects)."""
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
