"""Command line of the workflow: python -m workflow index|readme|membership|bench|campaign ... (see --help);
workflow/cli.py holds the parser. These were commands of ``python -m dirdp`` once; it now only says where they went."""

from __future__ import annotations

import sys

from dirdp.cli import below_one, run_main, to_json
from workflow.cli import parse


def _index(args) -> int:
    """``index``: the profile must be one of config/*.yaml, the --results folder and the folder of --out must
    exist (checked before any work; exit 2 with one line otherwise)."""
    from pathlib import Path

    from workflow.profile_schema import profiles

    known = profiles()
    out = Path(args.out) if args.out is not None else None  # None: the profile's own index (write_index's default)
    problem = None
    if known and args.profile not in known:
        problem = f"--profile {args.profile!r}: there is no config/{args.profile}.yaml. Profiles: {', '.join(known)}."
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
    from workflow.report.index import write_index

    print(write_index(results=args.results, profile=args.profile, out=args.out))
    return 0


def _bench_problem(args) -> str | None:
    """What is wrong with ``bench``'s arguments (None: nothing), checked before any model is built."""
    from pathlib import Path

    import torch

    from dirdp.training import MIN_WIDTH

    if not MIN_WIDTH <= args.width <= 8:
        return f"--width must be a channel multiplier in [{MIN_WIDTH:g}, 8]. Found {args.width:g}."
    if problem := below_one(args, "reps", "threads"):
        return problem
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

    from workflow.campaign import packing, plan, run

    try:
        if args.action == "status":
            print(plan.status(args.config, workdir=args.workdir))
        elif args.action == "unpack":
            written = packing.unpack(args.src, allow_smoke=args.allow_smoke,
                                      **({"root": Path(args.into)} if args.into else {}))
            print(f"unpacked {len(written)} files:\n" + "\n".join(f"  {w}" for w in written))
        else:
            if problem := below_one(args, "k", "max_runs", "bench_reps", "pack_parts"):
                raise ValueError(problem)
            if not args.budget >= 0:  # nan too
                raise ValueError(f"--budget must be >= 0 seconds (0: no limit). Found {args.budget:g}.")
            if not (1 <= args.pack_part_mib < float("inf")):  # nan too
                raise ValueError(f"--pack-part-mib must be a number of MiB, at least 1. Found {args.pack_part_mib:g}.")
            summary = run.run_campaign(args.config, budget_s=args.budget or None, k=args.k, pack_to=args.pack,
                                       smoke=args.smoke, workdir=args.workdir, max_runs=args.max_runs,
                                       tests=not args.no_tests, bench=not args.no_bench,
                                       bench_reps=args.bench_reps, require_clean=args.require_clean,
                                       fit=args.fit, pack_part_mib=args.pack_part_mib, pack_parts=args.pack_parts)
            failed = [r["run"] for r in summary["runs"] if r["status"] == "failed"]
            if failed:
                print(f"failed runs: {', '.join(failed)} (their logs are in {summary['campaign_dir']}/logs, and what "
                      f"{summary['train']['scheduler']} said in {summary['campaign_dir']}/{summary['train']['scheduler']}.log)",
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

    from dirdp.provenance import collect
    from workflow.bench import sweep

    if not args.json_out:
        return 0
    refused = sweep.refuse_busy_results_json(args.json_out, result)
    if refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    config = dict(command="python -m workflow " + " ".join(argv if argv is not None else sys.argv[1:]),
                  load_average_1min_at_end=result["load"]["load_1min_after"])  # kept: files before the load record
    Path(args.json_out).write_text(to_json(dict(rows=rows, **result, provenance=collect(config))) + "\n")
    return 0


def _bench(args, argv) -> int:
    problem = _bench_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    import torch

    from workflow.bench import accounting, core, sweep
    from workflow.bench import campaign as campaign_bench

    if args.threads or args.core:
        torch.set_num_threads(args.threads or 1)
    if args.core:  # r* solve, Table 7, the mechanism's loss (benchmarks/bench_core.py calls this)
        meter = sweep.LoadMeter().start()
        rows = accounting.core_bench()
        print(accounting.core_text(rows) + ("\n" + to_json(rows) if args.json else ""))
        return _bench_json(args, argv, dict(load=meter.stop()), rows=rows)
    if args.sweep:  # the CPU precision sweep: interleaved configurations, peaks, FLOPs, the load
        result = sweep.sweep(reps=args.reps, threads=tuple(args.sweep_threads))
        print(sweep.table(result))
        return _bench_json(args, argv, result, rows=result.pop("rows"))
    if args.campaign:
        return campaign_bench.campaign_main(models=args.models or ("inception", "resnet18", "resnet9", "papernot_cnn"),
                                            width=args.width, reps=args.reps, device=args.device,
                                            json_out=args.json_out, precisions=tuple(args.precisions),
                                            batch=args.batch)
    meter = sweep.LoadMeter().start()
    rows = core.main(args.models or ["inception", "resnet18", "resnet9"], width=args.width, reps=args.reps,
                     device=args.device, bf16=args.bf16, baselines=args.baselines, channels_last=args.channels_last)
    if args.json:
        print(to_json(rows))
    return _bench_json(args, argv, dict(load=meter.stop()), rows=rows)


def main(argv: list[str] | None = None) -> int:
    return run_main(_main, argv)  # a package of an extra that is not installed: one line, exit 2


def _main(argv: list[str] | None) -> int:
    args = parse(argv)
    if args.command == "index":
        return _index(args)
    if args.command == "membership":
        from workflow.audit.released import command

        return command(args.runs, n=args.n, seed=args.seed, data_root=args.data_root)
    if args.command == "readme":
        from workflow.report import readme
        try:
            return readme.main(args.readme, args.results, args.profile, args.check)
        except readme.ReadmeError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    if args.command == "campaign":
        return _campaign(args)
    return _bench(args, argv)


if __name__ == "__main__":
    sys.exit(main())
