"""The argument parser of ``python -m workflow``: the workflow's commands (index, readme, membership, bench,
campaign), their flags, defaults and help; workflow/__main__.py runs them. ``python -m dirdp <command>`` refuses these
names in one line that points here (dirdp.cli.MOVED)."""

from __future__ import annotations

import argparse
from functools import partial

from dirdp import cli

PROG = "python -m workflow"
describe = partial(cli.describe, prog=PROG)


def _add(sub, name: str, what: str, *examples: str) -> argparse.ArgumentParser:
    """A command whose --help opens with ``what`` and ``examples``; its line in the list of commands is the first
    sentence of ``what``."""
    first = what.split(". ")[0].rstrip(".")
    return sub.add_parser(name, help=first[0].lower() + first[1:], description=describe(what, *examples))


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog=PROG, description=describe(
        "The workflow beside the library: benchmark, index a profile's results, rewrite the README's generated "
        "blocks, audit released models and run a profile's campaign; each command has its own --help.",
        "index --profile cpu", "readme --check"))
    sub = parser.add_subparsers(dest="command", required=True, metavar="command",
                                title="commands (python -m workflow <command> --help for each)")
    p_i = _add(sub, "index", "Write a profile's results index: every paper object, the command that makes it, and our "
                             "numbers beside the paper's.", "index --profile cpu")
    p_i.add_argument("--results", default="results", help="results folder: the one holding every profile's "
                                                          "folder, or a profile's own")
    p_i.add_argument("--profile", required=True, help="the profile the DAG ran (config/<profile>.yaml)")
    p_i.add_argument("--out", help="index to write (default: the profile's own, <results>/<profile>/README.md; "
                                   "writing it also refreshes <results>/README.md, the index of the profiles)")
    p_m = _add(sub, "readme", "Rewrite the generated blocks (the result numbers) of the README and of every docs/*.md "
                              "beside it from a profile's result files, or with --check only compare them.",
               "readme --check", "readme --profile cpu")
    p_m.add_argument("--readme", default="README.md",
                     help="README whose generated blocks are rewritten, with those of the docs/*.md beside it")
    p_m.add_argument("--results", default="results", help="results folder")
    p_m.add_argument("--profile", default="cpu", help="the profile whose committed results the README cites")
    p_m.add_argument("--check", action="store_true", help="change nothing; exit 1 naming each block that differs")
    p_ms = _add(sub, "membership",
                "Audit released models by membership inference and keep each row in a record beside its run "
                "(RUN.json.membership). The test: their own training records against as many test records, the logit "
                "margin, beside the untrained model's null; the DAG's audit of the released models reads the record "
                "back where the weights are not in git. Needs each run's weights (RUN.model.pt); a record already "
                "made for the same weights, n, seed and code is kept.",
                "membership results/runs/cpu/fashionmnist/alg1_w1_bf16_eps2_seed0.json")
    p_ms.add_argument("runs", nargs="+", metavar="RUN.json", help="result files of released models (weights beside)")
    p_ms.add_argument("--n", type=int, default=None,
                      help="training records, and as many test records, per model (default: the DAG's, 10,000)")
    p_ms.add_argument("--seed", type=int, default=0, help="seed of the record draw (default 0, the DAG's)")
    p_ms.add_argument("--data-root", help="data folder (default: $DIRDP_DATA, else ./data)")
    p_b = _add(sub, "bench", "Time one training step of non-private training and of Algorithm 1 (optionally DP-SGD) "
                             "for each model.", "bench --models resnet9 --width 0.25 --reps 3")
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
    p = _add(sub, "campaign", "Train a profile's runs in priority order through Snakemake, K at a time, inside a time "
                              "budget, and say where each run stands (the GPU campaign; the CPU evidence campaign).",
             "campaign status --config config/cpu.yaml", "campaign run --smoke")
    act = p.add_subparsers(dest="action", required=True, metavar="action",
                           title="actions (python -m workflow campaign <action> --help for each)")
    r = _add(act, "run", "Run a profile's campaign: the CUDA test lane, the benchmark, then its runs in priority "
                         "order through Snakemake, K at a time, and pack what it made.",
             "campaign run --config config/gpu.yaml --budget 540 --pack out/", "campaign run --smoke")
    r.add_argument("--config", default="config/gpu.yaml", help="profile whose campaign queue runs")
    r.add_argument("--budget", type=float, default=540,
                   help="wall-clock seconds for everything, packing included (0: no limit). At the budget every run "
                        "gets SIGTERM and leaves its checkpoint; the next campaign run resumes it")
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
                   help="start only while the code equals its commit (the CPU campaign: no '+dirty' results)")
    s = _add(act, "status", "Show where each run of a profile's campaign stands: done, running, stopped or queued.",
             "campaign status --config config/cpu.yaml")
    s.add_argument("--config", default="config/cpu.yaml", help="profile whose campaign queue is shown")
    s.add_argument("--workdir", help="folder holding results/ (default: the repository)")
    u = _add(act, "unpack", "Put a campaign pack (DIR/campaign.tar.gz.00, ...) back into the repository.",
             "campaign unpack out/")
    u.add_argument("src", metavar="DIR", help="folder holding the pack")
    u.add_argument("--into", help="repository root (default: this one)")
    u.add_argument("--allow-smoke", action="store_true",
                   help="unpack a smoke pack (campaign run --smoke: 4-step CPU runs) too; refused without it")


def parse(argv: list[str] | None) -> argparse.Namespace:
    return cli.parse(build_parser(), argv)
