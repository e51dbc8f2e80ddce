"""How to lay full-width training runs out on this machine's cores: one run on every core, or one run per core.

Times the real full-width step (Inception with BatchNorm, Algorithm 1's loss, batch 250, bf16 autocast +
channels_last, :func:`workflow.bench.core._step`) in separate processes, in three layouts, interleaved round by round
(a drift in load hits all alike):

- ``one run, all cores``: one process with ``--cores`` torch threads (what the campaign runs today);
- ``one run per core``: ``--cores`` processes side by side, one thread each;
- ``one run, one thread``: one process, one thread, the other cores idle (the reference for contention).

For each layout: every process's median seconds a step, and the throughput in steps a second summed over the
processes. The ratio that decides the layout is the throughput of ``one run per core`` over ``one run, all cores``
(> 1: run one thread per run). The CPU time other processes used while it ran is recorded (``load``), and the JSON
is refused in ``results/`` when the machine was busy (as ``python -m workflow bench``).

    python benchmarks/bench_layout.py --json-out results/cpu/bench_layout_amd_epyc.json   # about 8 min, 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def worker(threads: int, steps: int, warmup: int, width: float) -> None:
    """Print one JSON list: the seconds of each of ``steps`` timed steps after ``warmup`` untimed ones."""
    import torch

    torch.set_num_threads(threads)
    from workflow.bench.core import ALG1, _losses, _setup, _step

    dev = torch.device("cpu")
    _, model, x, y, g = _setup("inception", width, dev, channels_last=True)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    step = _step(model, opt, x, y, _losses(g, 0.2771, 3.0)[ALG1], dev, bf16=True)
    for _ in range(warmup):
        step()
    print(json.dumps([step() for _ in range(steps)]), flush=True)


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def layout(procs: int, threads: int, *, steps: int, warmup: int, width: float) -> dict:
    """Run ``procs`` workers of ``threads`` threads at once; their step times and the summed throughput."""
    cmd = [sys.executable, __file__, "--worker", "--threads", str(threads), "--steps", str(steps),
           "--warmup", str(warmup), "--width", str(width)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    t0 = time.perf_counter()
    ps = [subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True) for _ in range(procs)]
    outs = [json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in ps]
    if any(p.returncode for p in ps):
        raise SystemExit("bench_layout: a worker failed")
    medians = [statistics.median(o) for o in outs]
    return dict(processes=procs, threads_each=threads, median_s_per_step=[round(m, 4) for m in medians],
                steps_per_s=round(sum(1.0 / m for m in medians), 4), wall_s=round(time.perf_counter() - t0, 1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="cores to lay runs out on (default: all)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per process and round (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (default 3)")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the three layouts, interleaved (default 2)")
    ap.add_argument("--width", type=float, default=1.0, help="Inception's width (default 1: the paper's)")
    ap.add_argument("--json-out", help="write the rows, the load and provenance here")
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.threads, args.steps, args.warmup, args.width)
        return 0
    for name in ("cores", "steps", "rounds"):
        if getattr(args, name) < 1:
            print(f"error: --{name} must be at least 1. Found {getattr(args, name)}.", file=sys.stderr)
            return 2
    from workflow.bench import sweep

    plan = {"one run, all cores": (1, args.cores), "one run per core": (args.cores, 1), "one run, one thread": (1, 1)}
    busy0, own0, load0, t0 = sweep._cpu_busy_s(), _children_cpu_s() + sweep._own_cpu_s(), os.getloadavg()[0], \
        time.perf_counter()
    rounds = {k: [] for k in plan}
    for r in range(args.rounds):
        for name, (procs, threads) in plan.items():
            row = layout(procs, threads, steps=args.steps, warmup=args.warmup, width=args.width)
            rounds[name].append(row)
            print(f"round {r + 1}: {name:22s} {row['steps_per_s']:.3f} steps/s  (s/step each: "
                  f"{', '.join(f'{m:.3f}' for m in row['median_s_per_step'])})", flush=True)
    wall = time.perf_counter() - t0
    others = max(0.0, (sweep._cpu_busy_s() - busy0) - (_children_cpu_s() + sweep._own_cpu_s() - own0))
    load = dict(load_1min_before=round(load0, 2), load_1min_after=round(os.getloadavg()[0], 2),
                others_cpu_s=round(others, 1), wall_s=round(wall, 1), cpus=os.cpu_count(),
                others_cpu_fraction=round(others / (wall * os.cpu_count()), 4))
    rows = [dict(layout=k, processes=plan[k][0], threads_each=plan[k][1],
                 steps_per_s=statistics.median(x["steps_per_s"] for x in v),
                 median_s_per_step=statistics.median(m for x in v for m in x["median_s_per_step"]), rounds=v)
            for k, v in rounds.items()]
    by = {r["layout"]: r for r in rows}
    ratio = by["one run per core"]["steps_per_s"] / by["one run, all cores"]["steps_per_s"]
    print(f"throughput, one run per core / one run on all {args.cores} cores: {ratio:.2f}x "
          f"(others used {100 * load['others_cpu_fraction']:.1f}% of the CPUs)")
    if args.json_out:
        from pathlib import Path

        from dirdp.provenance import collect

        result = dict(load=load)
        refused = sweep.refuse_busy_results_json(args.json_out, result)
        if refused:
            print(f"error: {refused}", file=sys.stderr)
            return 2
        config = dict(command="python benchmarks/bench_layout.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                      model="inception", width=args.width, batch=250, precision="bf16 + channels_last",
                      loss="Algorithm 1", steps=args.steps, warmup=args.warmup, rounds=args.rounds)
        Path(args.json_out).write_text(json.dumps(dict(rows=rows, per_core_over_all_cores=round(ratio, 4), load=load,
                                                       provenance=collect(config)), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
