"""Command line: python -m dirdp rstar|epsilon|train ... (see --help); dirdp/cli.py holds the parser. A name that
moved to the workflow (index, readme, membership, bench, campaign: dirdp.cli.MOVED) gets one line saying where it went
(``python -m workflow <command>``, from a checkout of the repository) and exit status 2; the library never runs it."""

from __future__ import annotations

import json
import sys

from dirdp import accountant, methods
from dirdp.cli import MOVED, below_one, build_parser, moved, parse, run_main, to_json
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
            raise ValueError(f"give --preset or --{key} (presets: {', '.join(PRESETS)}).")
        out[key] = value
    return out


def _train(args) -> int:
    from pathlib import Path

    from dirdp.data import DatasetMissingError
    from dirdp.training import Interrupted, make_config, train

    if problem := below_one(args, "threads"):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    try:
        cfg = make_config(args.dataset, args.eps, args.seed, method=args.method, max_grad_norm=args.max_grad_norm,
                          steps=args.steps, q=args.q, alpha=args.alpha,
                          delta=args.delta, lr=args.lr, optimizer=args.optimizer, model=args.model, width=args.width, norm=args.norm,
                          conv_bias=args.conv_bias or None, canaries=args.canaries or None,
                          canary_seed=args.canary_seed if args.canaries else None,
                          train_subset=args.train_subset, augment=args.augment, device=args.device, bf16=args.bf16,
                          channels_last=args.channels_last, eval_every=args.eval_every, log_every=args.log_every,
                          checkpoint_every=args.checkpoint_every)
        if Path(args.out).is_file() and not args.force:  # a folder as --out: train() says so
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
    eps = methods.get(cfg.method).describe(result)
    print(f"{cfg.method} {cfg.dataset} eps={cfg.eps:g} seed={cfg.seed} [{result['width_label']}, {cfg.precision}]: test accuracy "
          f"{result['test_accuracy']:.2f}%, certified eps={eps}, "
          f"{result['wall_time_s']:.0f} s ({result['steps_per_s']:.2f} steps/s) -> {args.out}")
    return 0


def _made_by(out) -> dict | None:
    """The run identity (``RunConfig.identity()``) recorded in an existing result JSON; None if unreadable."""
    from dirdp.training import RunConfig

    try:
        rec = json.loads(out.read_text())
        config = {k: float(v) if v in ("inf", "-inf", "nan") else v for k, v in rec["provenance"]["config"].items()}
        return RunConfig(**{"method": rec.get("method", methods.DEFAULT), **config}).identity()
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in MOVED:  # a command of the workflow now: one line, no usage
        print(f"error: {moved(args[0])}", file=sys.stderr)
        return 2
    return run_main(_main, argv)  # a package of an extra missing (pip install .: the library alone): one line


def _main(argv: list[str] | None) -> int:
    args = parse(build_parser(), argv)
    if args.command == "train":
        return _train(args)
    record = dict(preset=args.preset)
    try:
        proto = _protocol(args)
        record.update(proto, max_order=args.max_order)
        if args.command == "rstar":
            r, spend = accountant.calibrate(eps=args.eps, max_order=args.max_order, **proto)
            record.update(eps=args.eps, rstar=r, certified_epsilon=spend.epsilon, order=spend.order)
            text = (f"r* = {r:.6f}  (target eps={args.eps:g}; Theorem 10 certifies eps={spend.epsilon:.6f} "
                    f"at order lambda={spend.order})")
        else:
            spend = accountant.epsilon(r=args.r, max_order=args.max_order, **proto)
            record.update(r=args.r, epsilon=spend.epsilon, order=spend.order)
            text = f"epsilon = {spend.epsilon:.6f} at order lambda={spend.order}  (r={args.r:g}, delta={proto['delta']:g})"
    except ValueError as err:
        if args.json:
            print(to_json(dict(record, error=str(err))))
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(to_json(record))
    else:
        print(text)
        print(f"  alpha={proto['alpha']:g}  q={proto['q']:.6g}  T={proto['steps']}  delta={proto['delta']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
