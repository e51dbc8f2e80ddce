"""Command line: ``python -m dirdp rstar|epsilon|train|bench ...`` (see ``--help``)."""

from __future__ import annotations

import argparse
import json
import sys

from dirdp import accountant
from dirdp.presets import PRESETS, get_preset

EXIT_INTERRUPTED = 75  # train stopped by SIGTERM/SIGINT after checkpointing (EX_TEMPFAIL): rerun to resume


def _protocol(args) -> dict:
    """(alpha, q, steps, delta) from --preset, each overridable by its own flag."""
    base = get_preset(args.preset) if args.preset else None
    out = {}
    for key, default in (("alpha", None), ("q", None), ("steps", None), ("delta", 1e-5)):
        value = getattr(args, key)
        if value is None and base is not None:
            value = getattr(base, key)
        if value is None:
            value = default
        if value is None:
            raise SystemExit(f"error: give --preset or --{key} (presets: {', '.join(PRESETS)}).")
        out[key] = value
    return out


def _add_protocol_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", choices=sorted(PRESETS), help="protocol of Section 4.1.2 (q, T, alpha=3, delta=1e-5)")
    p.add_argument("--alpha", type=float, help="Dirichlet offset alpha (preset: 3)")
    p.add_argument("--q", type=float, help="Poisson sampling rate q")
    p.add_argument("--steps", type=int, help="number of training steps T")
    p.add_argument("--delta", type=float, help="DP delta (default 1e-5)")
    p.add_argument("--max-order", type=int, default=accountant.DEFAULT_MAX_ORDER, help="largest RDP order searched")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _eps(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"eps must be > 0 or 'inf'. Found {text}.")
    return value


def _add_train_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", required=True, choices=sorted(PRESETS))
    p.add_argument("--eps", type=_eps, required=True, help="target epsilon, or 'inf' for the non-private column")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="result JSON (checkpoint beside it, as <out>.ckpt.pt)")
    p.add_argument("--method", default="alg1", choices=["alg1", "dpsgd", "tempered", "latent"],
                   help="alg1: Algorithm 1; dpsgd: DP-SGD with Opacus (C=1, sigma calibrated to eps by its RDP "
                        "accountant); tempered: DP-SGD on the tempered-sigmoid CNN of Papernot et al.; latent: "
                        "LATENT local DP (its eps is per record, a different guarantee)")
    g = p.add_argument_group("overrides of the paper's protocol (r* is recomputed for what actually runs)")
    g.add_argument("--steps", type=int, help="T")
    g.add_argument("--q", type=float, help="Poisson sampling rate")
    g.add_argument("--alpha", type=float)
    g.add_argument("--delta", type=float)
    g.add_argument("--lr", type=float)
    g.add_argument("--optimizer", choices=["sgd", "adam"])
    g.add_argument("--model", help="inception, resnet18, resnet9 or papernot_cnn")
    g.add_argument("--max-grad-norm", type=float, help="DP-SGD clipping norm C (default 1.0)")
    g.add_argument("--width", type=float, help="channel-width multiplier (1 = the paper's model)")
    g.add_argument("--train-subset", type=int, help="train on a seeded random subset of this size")
    g.add_argument("--no-augment", dest="augment", action="store_const", const=False, help="no CIFAR-10 augmentation")
    d = p.add_argument_group("execution")
    d.add_argument("--device", default="cpu", help="cpu or cuda")
    d.add_argument("--bf16", action="store_true", help="bf16 autocast for the model (the mechanism stays float32)")
    d.add_argument("--channels-last", action="store_true")
    d.add_argument("--eval-every", type=int, default=500)
    d.add_argument("--log-every", type=int, default=50)
    d.add_argument("--checkpoint-every", type=int, default=200)
    d.add_argument("--threads", type=int, help="CPU threads for torch (default: torch's choice)")
    d.add_argument("--data-root", help="data folder (default: $DIRDP_DATA, else ./data)")
    d.add_argument("--no-progress", action="store_true")
    d.add_argument("--force", action="store_true", help="run again even if --out exists")


def _train(args) -> int:
    from pathlib import Path

    from dirdp.data import DatasetMissingError
    from dirdp.training import Interrupted, make_config, train

    if args.threads is not None and args.threads < 1:
        print(f"error: --threads must be at least 1. Found {args.threads}.", file=sys.stderr)
        return 2
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    try:
        cfg = make_config(args.dataset, args.eps, args.seed, method=args.method, max_grad_norm=args.max_grad_norm,
                          steps=args.steps, q=args.q, alpha=args.alpha,
                          delta=args.delta, lr=args.lr, optimizer=args.optimizer, model=args.model, width=args.width,
                          train_subset=args.train_subset, augment=args.augment, device=args.device, bf16=args.bf16,
                          channels_last=args.channels_last, eval_every=args.eval_every, log_every=args.log_every,
                          checkpoint_every=args.checkpoint_every)
        if Path(args.out).exists() and not args.force:
            made = _made_by(Path(args.out))
            if made is not None and made != cfg.identity():
                diff = ", ".join(f"{k}: {made.get(k)!r} there, {v!r} asked" for k, v in cfg.identity().items()
                                 if made.get(k) != v)
                raise ValueError(f"{args.out} exists and holds another run ({diff}). Choose another --out, "
                                 "or --force to replace it.")
            print(f"{args.out} exists: nothing to do (use --force to run again).", file=sys.stderr)
            return 0
        result = train(cfg, args.out, data_root=args.data_root, progress=not args.no_progress)
    except (ValueError, DatasetMissingError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Interrupted as stopped:  # SIGTERM/SIGINT: the checkpoint is written, the same command resumes
        print(f"stopped: {stopped}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if cfg.method == "latent":
        eps = (f"{result['epsilon']:g} claimed (local DP per record); exact LDP epsilon of the release "
               f"{result['eps_ldp_worst_case']:.4g}")
    elif result.get("noise_multiplier") is not None:
        eps = (f"{result['epsilon']:.4f} (Opacus RDP; PRV {result['epsilon_prv']:.4f}), "
               f"sigma={result['noise_multiplier']:.4f}")
    elif result["rstar"] is not None:
        eps = f"{result['epsilon']:.4f} (Theorem 10, order {result['epsilon_order']}), r*={result['rstar']:.6f}"
    else:
        eps = "inf"
    print(f"{cfg.method} {cfg.dataset} eps={cfg.eps:g} seed={cfg.seed} [{result['width_label']}]: test accuracy "
          f"{result['test_accuracy']:.2f}%, certified eps={eps}, "
          f"{result['wall_time_s']:.0f} s ({result['steps_per_s']:.2f} steps/s) -> {args.out}")
    return 0


def _made_by(out) -> dict | None:
    """The run identity (``RunConfig.identity()``) recorded in an existing result JSON; None if unreadable."""
    from dirdp.training import RunConfig

    try:
        rec = json.loads(out.read_text())
        config = {k: float(v) if v in ("inf", "-inf", "nan") else v for k, v in rec["provenance"]["config"].items()}
        return RunConfig(**{"method": rec.get("method", "alg1"), **config}).identity()
    except (OSError, ValueError, KeyError, TypeError):
        return None


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
    p_i.add_argument("--results", default="results")
    p_i.add_argument("--profile", required=True, help="the profile the DAG ran (config/<profile>.yaml)")
    p_i.add_argument("--out", default="results/README.md")
    p_b = sub.add_parser("bench", help="per-step time of non-private training vs Algorithm 1, per model")
    p_b.add_argument("--models", nargs="+", choices=["inception", "resnet18", "resnet9", "papernot_cnn"],
                     help="default: inception resnet18 resnet9 (with --campaign: and papernot_cnn)")
    p_b.add_argument("--width", type=float, default=1.0)
    p_b.add_argument("--reps", type=int, default=5)
    p_b.add_argument("--device", default="cpu")
    p_b.add_argument("--bf16", action="store_true")
    p_b.add_argument("--channels-last", action="store_true")
    p_b.add_argument("--baselines", action="store_true",
                     help="also DP-SGD (Opacus) vs Algorithm 1 on the same GroupNorm model, and the tempered-sigmoid CNN")
    p_b.add_argument("--threads", type=int,
                     help="CPU threads for torch (default: torch's choice; the cpu profile's runs use 1)")
    p_b.add_argument("--json", action="store_true", help="also print the rows as one JSON list")
    p_b.add_argument("--campaign", action="store_true",
                     help="the GPU campaign's table: inception and resnet18 (or --models), non-private / Algorithm 1 / "
                          "DP-SGD, fp32 and bf16 + channels_last, peak memory, and the projected time of a Table-1 "
                          "cell and of the paper profile")
    p_b.add_argument("--json-out", help="with --campaign: write the rows and projections to this JSON file")
    p_b.add_argument("--precisions", nargs="+", default=["fp32", "bf16+cl"], choices=["fp32", "fp32+cl", "bf16", "bf16+cl"],
                     help="with --campaign: fp32 and/or bf16 autocast, each optionally channels_last (+cl)")
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
    r.add_argument("--bench-reps", type=int, default=10)
    r.add_argument("--require-clean", action="store_true",
                   help="start a run only while the code equals its commit (the CPU campaign: no '+dirty' results)")
    s = act.add_parser("status", help="where each run of a profile's campaign stands")
    s.add_argument("--config", default="config/cpu.yaml")
    s.add_argument("--workdir")
    u = act.add_parser("unpack", help="put a campaign pack (DIR/campaign.tar.gz.00, ...) back into the repository")
    u.add_argument("src", metavar="DIR")
    u.add_argument("--into", help="repository root (default: this one)")


def _campaign(args) -> int:
    from pathlib import Path

    from dirdp import campaign

    try:
        if args.action == "status":
            print(campaign.status(args.config, workdir=args.workdir))
        elif args.action == "unpack":
            written = campaign.unpack(args.src, **({"root": Path(args.into)} if args.into else {}))
            print(f"unpacked {len(written)} files:\n" + "\n".join(f"  {w}" for w in written))
        else:
            if args.k is not None and args.k < 1:
                raise ValueError(f"--k must be at least 1. Found {args.k}.")
            if args.budget < 0:
                raise ValueError(f"--budget must be >= 0 seconds (0: no limit). Found {args.budget:g}.")
            summary = campaign.run_campaign(args.config, budget_s=args.budget or None, k=args.k, pack_to=args.pack,
                                            smoke=args.smoke, workdir=args.workdir, max_runs=args.max_runs,
                                            tests=not args.no_tests, bench=not args.no_bench,
                                            bench_reps=args.bench_reps, require_clean=args.require_clean)
            failed = [r["run"] for r in summary["runs"] if r["status"] == "failed"]
            if failed:
                print(f"failed runs: {', '.join(failed)} (their logs are in {summary['campaign_dir']}/logs)",
                      file=sys.stderr)
                return 1
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "train":
        return _train(args)
    if args.command == "index":
        from dirdp.index import write_index

        print(write_index(results=args.results, profile=args.profile, out=args.out))
        return 0
    if args.command == "campaign":
        return _campaign(args)
    if args.command == "bench":
        import torch

        from dirdp import bench

        if args.threads:
            torch.set_num_threads(args.threads)
        if args.campaign:
            return bench.campaign_main(models=args.models or ("inception", "resnet18", "resnet9", "papernot_cnn"),
                                       width=args.width, reps=args.reps, device=args.device, json_out=args.json_out,
                                       precisions=tuple(args.precisions))

        rows = bench.main(args.models or ["inception", "resnet18", "resnet9"], width=args.width, reps=args.reps, device=args.device, bf16=args.bf16,
                          baselines=args.baselines,
                          channels_last=args.channels_last)
        if args.json:
            print(json.dumps(rows))
        return 0

    proto = _protocol(args)
    record = dict(preset=args.preset, **proto, max_order=args.max_order)
    try:
        if args.command == "rstar":
            r = accountant.rstar(eps=args.eps, max_order=args.max_order, **proto)
            spend = accountant.epsilon(r=r, max_order=args.max_order, **proto)
            record.update(eps=args.eps, rstar=r, certified_epsilon=spend.epsilon, order=spend.order)
            text = (f"r* = {r:.6f}  (target eps={args.eps:g}; Theorem 10 certifies eps={spend.epsilon:.6f} "
                    f"at order lambda={spend.order})")
        else:
            spend = accountant.epsilon(r=args.r, max_order=args.max_order, **proto)
            record.update(r=args.r, epsilon=spend.epsilon, order=spend.order)
            text = f"epsilon = {spend.epsilon:.6f} at order lambda={spend.order}  (r={args.r:g}, delta={proto['delta']:g})"
    except ValueError as err:
        if args.json:
            print(json.dumps(dict(record, error=str(err))))
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(record))
    else:
        print(text)
        print(f"  alpha={proto['alpha']:g}  q={proto['q']:.6g}  T={proto['steps']}  delta={proto['delta']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
