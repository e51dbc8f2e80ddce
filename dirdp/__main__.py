"""Command line: python -m dirdp rstar|epsilon|train|index|readme|membership|bench|campaign ... (see --help);
dirdp/cli.py holds the parser."""

from __future__ import annotations

import json
import sys

from dirdp import accountant, methods
from dirdp.presets import PRESETS, get_preset
from dirdp.cli import _parse, build_parser  # noqa: F401  (build_parser: the parser, for tests and docs)

EXIT_INTERRUPTED = 75  # train stopped by SIGTERM/SIGINT after checkpointing (EX_TEMPFAIL): rerun to resume


def _json(obj) -> str:
    """``obj`` as strict JSON: a non-finite float is written as the string "inf", "-inf" or "nan" (JSON has no
    Infinity or NaN; :func:`dirdp.protocol.parse_eps` reads those strings back)."""
    from dirdp.provenance import jsonable

    return json.dumps(jsonable(obj), allow_nan=False)


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

    if args.threads is not None and args.threads < 1:
        print(f"error: --threads must be at least 1. Found {args.threads}.", file=sys.stderr)
        return 2
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    try:
        cfg = make_config(args.dataset, args.eps, args.seed, method=args.method, max_grad_norm=args.max_grad_norm,
                          steps=args.steps, q=args.q, alpha=args.alpha,
                          delta=args.delta, lr=args.lr, optimizer=args.optimizer, model=args.model, width=args.width, norm=args.norm,
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


def _index(args) -> int:
    """``index``: the profile must be one of config/*.yaml, the --results folder and the folder of --out must
    exist (checked before any work; exit 2 with one line otherwise)."""
    from pathlib import Path

    import dirdp

    config = Path(dirdp.__file__).resolve().parents[1] / "config"
    profiles = sorted(p.stem for p in config.glob("*.yaml") if p.stem != "schema")
    out = Path(args.out) if args.out is not None else None  # None: the profile's own index (write_index's default)
    problem = None
    if profiles and args.profile not in profiles:
        problem = (f"--profile {args.profile!r}: there is no config/{args.profile}.yaml. "
                   f"Profiles: {', '.join(profiles)}.")
    elif not Path(args.results).is_dir():
        what = "is a file, not a folder" if Path(args.results).exists() else "does not exist"
        problem = (f"--results {args.results}: the folder {what}; give the results folder the DAG wrote "
                   f"(results, or results/{args.profile}).")
    elif out is not None and not out.parent.is_dir():
        what = "is a file, not a folder" if out.parent.exists() else "does not exist"
        problem = f"--out {args.out}: the folder {out.parent} {what}; choose another --out (or create the folder)."
    elif out is not None and out.is_dir():
        problem = f"--out {args.out} is a folder; give a file name, such as {out / 'README.md'}."
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from dirdp.report.index import write_index

    print(write_index(results=args.results, profile=args.profile, out=args.out))
    return 0


def _bench_problem(args) -> str | None:
    """What is wrong with ``bench``'s arguments (None: nothing), checked before any model is built."""
    from pathlib import Path

    import torch

    from dirdp.training import MIN_WIDTH

    if not MIN_WIDTH <= args.width <= 8:
        return f"--width must be a channel multiplier in [{MIN_WIDTH:g}, 8]. Found {args.width:g}."
    if args.reps < 1:
        return f"--reps must be at least 1. Found {args.reps}."
    if args.threads is not None and args.threads < 1:
        return f"--threads must be at least 1. Found {args.threads}."
    try:
        device = torch.device(args.device)
    except (RuntimeError, ValueError):
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        return f"--device must be cpu, cuda or cuda:N. Found {args.device!r}."
    if device.type == "cuda" and not torch.cuda.is_available():
        return f"--device {args.device}: torch sees no CUDA device. Use --device cpu."
    if args.json_out and not Path(args.json_out).parent.is_dir():
        return f"--json-out {args.json_out}: the folder {Path(args.json_out).parent} does not exist."
    return None


def _campaign(args) -> int:
    from pathlib import Path

    from dirdp import campaign

    try:
        if args.action == "status":
            print(campaign.status(args.config, workdir=args.workdir))
        elif args.action == "unpack":
            written = campaign.unpack(args.src, allow_smoke=args.allow_smoke,
                                      **({"root": Path(args.into)} if args.into else {}))
            print(f"unpacked {len(written)} files:\n" + "\n".join(f"  {w}" for w in written))
        else:
            if args.k is not None and args.k < 1:
                raise ValueError(f"--k must be at least 1. Found {args.k}.")
            if not args.budget >= 0:  # nan too
                raise ValueError(f"--budget must be >= 0 seconds (0: no limit). Found {args.budget:g}.")
            if args.max_runs is not None and args.max_runs < 1:
                raise ValueError(f"--max-runs must be at least 1. Found {args.max_runs}.")
            if args.bench_reps < 1:
                raise ValueError(f"--bench-reps must be at least 1. Found {args.bench_reps}.")
            if not (1 <= args.pack_part_mib < float("inf")):  # nan too
                raise ValueError(f"--pack-part-mib must be a number of MiB, at least 1. Found {args.pack_part_mib:g}.")
            if args.pack_parts < 1:
                raise ValueError(f"--pack-parts must be at least 1. Found {args.pack_parts}.")
            summary = campaign.run_campaign(args.config, budget_s=args.budget or None, k=args.k, pack_to=args.pack,
                                            smoke=args.smoke, workdir=args.workdir, max_runs=args.max_runs,
                                            tests=not args.no_tests, bench=not args.no_bench,
                                            bench_reps=args.bench_reps, require_clean=args.require_clean,
                                            fit=args.fit, pack_part_mib=args.pack_part_mib,
                                            pack_parts=args.pack_parts)
            failed = [r["run"] for r in summary["runs"] if r["status"] == "failed"]
            if failed:
                print(f"failed runs: {', '.join(failed)} (their logs are in {summary['campaign_dir']}/logs)",
                      file=sys.stderr)
                return 1
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def _bench_json(args, argv, result: dict, *, rows: list) -> int:
    """Write the benchmark's rows, the load it ran under and provenance to ``--json-out`` (the committed benchmarks
    the README's tables are generated from); refused, exit 2, for a file in results/ measured on a busy machine."""
    from pathlib import Path

    from dirdp.bench import sweep
    from dirdp.provenance import collect

    if not args.json_out:
        return 0
    refused = sweep.refuse_busy_results_json(args.json_out, result)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    config = dict(command="python -m dirdp " + " ".join(argv if argv is not None else sys.argv[1:]),
                  load_average_1min_at_end=result["load"]["load_1min_after"])  # kept: files before the load record
    Path(args.json_out).write_text(_json(dict(rows=rows, **result, provenance=collect(config))) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except ModuleNotFoundError as err:  # a package of an extra (pip install .: the library alone): one line, exit 2
        from dirdp.extras import missing

        if (line := missing(err)) is None:
            raise
        print(f"error: {line}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    args = _parse(argv)
    if args.command == "train":
        return _train(args)
    if args.command == "index":
        return _index(args)
    if args.command == "membership":
        from dirdp.audit.membership import command

        return command(args.runs, n=args.n, seed=args.seed, data_root=args.data_root)
    if args.command == "readme":
        from dirdp.report import readme
        try:
            return readme.main(args.readme, args.results, args.profile, args.check)
        except readme.ReadmeError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    if args.command == "campaign":
        return _campaign(args)
    if args.command == "bench":
        problem = _bench_problem(args)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
        import torch

        from dirdp import bench

        if args.threads or args.core:
            torch.set_num_threads(args.threads or 1)
        from dirdp.bench import sweep

        if args.core:  # r* solve, Table 7, the mechanism's loss (benchmarks/bench_core.py calls this)
            meter = sweep.LoadMeter().start()
            rows = bench.core_bench()
            print(bench.core_text(rows) + ("\n" + _json(rows) if args.json else ""))
            return _bench_json(args, argv, dict(load=meter.stop()), rows=rows)

        if args.sweep:  # the CPU precision sweep (issue 31): interleaved configurations, peaks, FLOPs, the load
            result = sweep.sweep(reps=args.reps, threads=tuple(args.sweep_threads))
            print(sweep.table(result))
            return _bench_json(args, argv, result, rows=result.pop("rows"))
        if args.campaign:
            return bench.campaign_main(models=args.models or ("inception", "resnet18", "resnet9", "papernot_cnn"),
                                       width=args.width, reps=args.reps, device=args.device, json_out=args.json_out,
                                       precisions=tuple(args.precisions), batch=args.batch)

        meter = sweep.LoadMeter().start()
        rows = bench.main(args.models or ["inception", "resnet18", "resnet9"], width=args.width, reps=args.reps, device=args.device, bf16=args.bf16,
                          baselines=args.baselines,
                          channels_last=args.channels_last)
        if args.json:
            print(_json(rows))
        return _bench_json(args, argv, dict(load=meter.stop()), rows=rows)

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
            print(_json(dict(record, error=str(err))))
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(_json(record))
    else:
        print(text)
        print(f"  alpha={proto['alpha']:g}  q={proto['q']:.6g}  T={proto['steps']}  delta={proto['delta']:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
