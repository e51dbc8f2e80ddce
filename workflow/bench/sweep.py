"""The CPU precision sweep (``python -m workflow bench --sweep``): what fp32, bf16 autocast and bf16 + channels_last
cost per training step on this machine, and how close each comes to what the machine can do.

One process times every configuration -- Inception at each width, Algorithm 1 and non-private, each precision, each
thread count -- interleaved round by round (a drift in load hits all alike), after warm-up rounds, and reports the
median seconds per step and its ratio to fp32 at the same width, method and threads. The step is the one of
:mod:`workflow.bench.core` (forward, loss, backward, SGD update on a fixed batch of the paper's size).

What the machine can do is measured, not quoted: the median GFLOP/s of a large ``torch.matmul`` in fp32 and in bf16
at each thread count (the bf16 peak is where AMX / AVX512-BF16 kernels show). A step's FLOPs are counted once by
``torch.utils.flop_counter`` (forward and backward; what autocast changes is the speed, not the count), so each
configuration gets its effective GFLOP/s and its fraction of its own precision's peak.

The machine must be quiet for the figures to mean anything: the load average before and after, and the CPU time
other processes used while the sweep ran (from ``/proc/stat`` less this process's own), are recorded, and a JSON
meant for ``results/`` is refused when the machine was busy (:data:`BUSY`).
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from pathlib import Path

import torch

from workflow.bench.accounting import median_time
from workflow.bench.campaign import PRECISIONS  # precision name -> (bf16 autocast, channels_last)
from workflow.bench.core import ALG1, NONPRIVATE, _losses, _setup, _step

SWEPT = ("fp32", "bf16", "bf16+cl")  # the precisions the sweep times (keys of PRECISIONS)
METHODS = (ALG1, NONPRIVATE)  # the keys of workflow.bench.core._losses
# a quiet machine: other processes used less than this fraction of all CPUs while the benchmark ran. The load averages
# are recorded but decide nothing: they lag by minutes and count the benchmark before this one as load
BUSY = dict(others_cpu_fraction=0.05)


def _cpu_busy_s() -> float:
    """Seconds of CPU time all processes have spent not idle (``/proc/stat``'s first line), since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


class LoadMeter:
    """The CPU time other processes spend between :meth:`start` and :meth:`stop`, as a fraction of all CPUs."""

    def start(self) -> "LoadMeter":
        self.t0, self.busy0, self.own0 = time.perf_counter(), _cpu_busy_s(), _own_cpu_s()
        self.load_before = os.getloadavg()[0]
        return self

    def stop(self) -> dict:
        wall = time.perf_counter() - self.t0
        others = max(0.0, (_cpu_busy_s() - self.busy0) - (_own_cpu_s() - self.own0))
        return dict(load_1min_before=round(self.load_before, 2), load_1min_after=round(os.getloadavg()[0], 2),
                    others_cpu_s=round(others, 1), wall_s=round(wall, 1), cpus=os.cpu_count(),
                    others_cpu_fraction=round(others / (wall * os.cpu_count()), 4) if wall > 0 else None)


def busy_reason(load: dict) -> str | None:
    """Why the machine counts as busy during a sweep (None: quiet), from :meth:`LoadMeter.stop`."""
    why = []
    if load["others_cpu_fraction"] is not None and load["others_cpu_fraction"] >= BUSY["others_cpu_fraction"]:
        why.append(f"other processes used {100 * load['others_cpu_fraction']:.1f}% of the {load['cpus']} CPUs while "
                   f"it ran (busy: >= {100 * BUSY['others_cpu_fraction']:g}%)")
    return "; ".join(why) or None


def matmul_peak(dtype: torch.dtype, threads: int, *, n: int = 2048, reps: int = 7) -> float:
    """Median GFLOP/s of an ``n x n`` by ``n x n`` ``torch.matmul`` in ``dtype`` on ``threads`` threads, after
    warm-up: what this machine's kernels reach at that precision (2 n^3 FLOPs a product)."""
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g).to(dtype)
    b = torch.randn(n, n, generator=g).to(dtype)
    return 2 * n**3 / median_time(lambda: torch.matmul(a, b), reps, warmup=3) / 1e9


def step_flops(model, x, y, loss) -> int:
    """FLOPs of one forward and backward pass (``torch.utils.flop_counter``; convolutions and matrix products)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        loss(model(x), y).backward()
    model.zero_grad(set_to_none=True)
    return counter.get_total_flops()


def _threaded(step, threads: int):
    def run() -> float:
        torch.set_num_threads(threads)
        return step()
    return run


def sweep(*, widths=(1.0, 0.25), threads=(1, 2), precisions=SWEPT, reps: int = 5, warmup: int = 2,
          r: float = 0.2349, alpha: float = 3.0, progress: bool = True) -> dict:
    """Time every (width, precision, method, threads) configuration interleaved; the peaks; FLOPs; the load."""
    meter = LoadMeter().start()
    peaks = {f"{p}_t{t}": matmul_peak(dtype, t) for t in threads
             for p, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16))}
    steps, flops = {}, {}
    for width in widths:
        for prec in precisions:
            bf16, cl = PRECISIONS[prec]
            _, model, x, y, g = _setup("inception", width, torch.device("cpu"), channels_last=cl)
            opt = torch.optim.SGD(model.parameters(), lr=1e-6)
            losses = _losses(g, r, alpha)
            for method in METHODS:
                if (width, method) not in flops:
                    flops[(width, method)] = step_flops(model, x, y, losses[method])
                for t in threads:
                    steps[(width, prec, method, t)] = _threaded(_step(model, opt, x, y, losses[method],
                                                                      torch.device("cpu"), bf16), t)
    times = {k: [] for k in steps}
    rounds = warmup + reps
    for i in range(rounds):
        t0 = time.perf_counter()
        for k, step in steps.items():
            s = step()
            if i >= warmup:
                times[k].append(s)
        if progress:
            print(f"  round {i + 1} of {rounds} ({'warm-up' if i < warmup else 'timed'}): "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    rows = []
    for (width, prec, method, t), ts in times.items():
        med = statistics.median(ts)
        peak = peaks[f"{'bf16' if PRECISIONS[prec][0] else 'fp32'}_t{t}"]
        gflops = flops[(width, method)] / med / 1e9
        rows.append(dict(model="inception", width=width, method=method, precision=prec, threads=t, reps=reps,
                         median_s=med, min_s=min(ts), max_s=max(ts), step_gflop=flops[(width, method)] / 1e9,
                         gflops=gflops, peak_gflops=peak, fraction_of_peak=gflops / peak))
    fp32 = {(r["width"], r["method"], r["threads"]): r["median_s"] for r in rows if r["precision"] == "fp32"}
    for row in rows:
        base = fp32.get((row["width"], row["method"], row["threads"]))
        row["vs_fp32"] = row["median_s"] / base if base else None
    return dict(rows=rows, peaks_gflops=peaks, load=meter.stop(), busy_rule=BUSY,
                cpu=_cpu_name(), avx512_bf16=_has_flag("avx512_bf16"), amx_bf16=_has_flag("amx_bf16"))


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def _cpu_name() -> str:
    for line in _cpuinfo().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def _has_flag(flag: str) -> bool:
    return any(line.startswith("flags") and f" {flag}" in line for line in _cpuinfo().splitlines())


def table(result: dict) -> str:
    """The sweep as text: one line per configuration, then the peaks and the load."""
    head = (f"{'width':>5s} {'method':10s} {'precision':9s} {'thr':>3s} {'s/step':>8s} {'vs fp32':>7s} "
            f"{'GFLOP/step':>10s} {'GFLOP/s':>8s} {'of peak':>7s}")
    lines = [f"CPU: {result['cpu']} (avx512_bf16: {result['avx512_bf16']}, amx_bf16: {result['amx_bf16']})", head]
    for r in sorted(result["rows"], key=lambda r: (-r["width"], r["method"], r["threads"], r["precision"])):
        lines.append(f"{r['width']:5g} {r['method']:10s} {r['precision']:9s} {r['threads']:3d} {r['median_s']:8.3f} "
                     f"{r['vs_fp32']:7.2f} {r['step_gflop']:10.1f} {r['gflops']:8.1f} {r['fraction_of_peak']:7.1%}")
    lines.append("matmul peaks (GFLOP/s): " + ", ".join(f"{k} {v:.0f}" for k, v in result["peaks_gflops"].items()))
    load = result["load"]
    lines.append(f"load: 1-min average {load['load_1min_before']} before, {load['load_1min_after']} after; other "
                 f"processes {load['others_cpu_s']} CPU-s in {load['wall_s']} s "
                 f"({100 * load['others_cpu_fraction']:.1f}% of {load['cpus']} CPUs)")
    return "\n".join(lines)


def refuse_busy_results_json(json_out: str | None, result: dict) -> str | None:
    """Why ``json_out`` may not be written (None: it may): a file under a ``results/`` folder is evidence, and is
    written only from a quiet machine."""
    if not json_out or "results" not in Path(json_out).resolve().parts:
        return None
    why = busy_reason(result["load"])
    if why:
        return (f"not writing {json_out}: the machine was busy ({why}); a benchmark in results/ is measured on a "
                "quiet machine: stop other work (bash scripts/campaign.sh stop) and run it again, or write the JSON "
                "outside results/.")
    return None
