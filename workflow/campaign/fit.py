"""How many runs a campaign trains side by side (:func:`choose_k`) and which ones it starts (:func:`fit_runs`,
the queue fitted to the budget): every run started must finish inside the budget, whatever the GPU's speed, from
the benchmark's measured seconds per step (:func:`run_seconds`)."""

from __future__ import annotations

import os

from workflow.experiments import Profile


def choose_k(bench_rows: list[dict] | None, *, device: str, cpu_count: int | None = None, k_max: int = 8) -> tuple[int, str]:
    """How many runs to train side by side, and why. On CUDA: as many as memory allows (the benchmark's
    peak memory of a full-width Algorithm-1 step, twice over for safety, against 80% of the GPU), at most
    one per two CPU cores and ``k_max``. On CPU: one per core."""
    cpus = cpu_count or os.cpu_count() or 1
    if not device.startswith("cuda"):
        return max(1, min(k_max, cpus)), f"CPU: one run per core ({cpus} cores)"
    import torch

    total = torch.cuda.get_device_properties(0).total_memory / 2**30
    peaks = [r["peak_mem_gib"]["algorithm1"] for r in bench_rows or []
             if isinstance(r.get("peak_mem_gib"), dict) and r["peak_mem_gib"].get("algorithm1")]
    by_mem = int(0.8 * total / (2 * max(peaks))) if peaks else k_max
    k = max(1, min(k_max, cpus // 2, by_mem))
    return k, (f"min(k_max {k_max}, {cpus} CPU cores / 2, 80% of {total:.0f} GiB / (2 x peak "
               f"{max(peaks) if peaks else float('nan'):.2f} GiB) = {by_mem})")


# what a run costs beyond its training steps (the fitted plan, :func:`fit_runs`): evaluation every eval_every steps,
# Poisson sampling, data loading, checkpoints; and a process's start (imports, data set, CUDA context)
RUN_OVERHEAD = 1.3
RUN_START_S = 30.0


def run_seconds(job, rows: list[dict] | None, profile: Profile) -> float | None:
    """Projected wall time of one job from the benchmark's rows (:func:`workflow.bench.projection._run_cost` at the
    job's precision: steps x median seconds per step, batch-scaled), times :data:`RUN_OVERHEAD`, plus
    :data:`RUN_START_S`; None where the benchmark measured no row for it. A resumed run costs its steps left."""
    from workflow.bench.projection import _run_cost
    from workflow.campaign.plan import checkpoint_step

    if not rows:
        return None
    precision = "bf16+cl" if getattr(job.run, "precision", "fp32") == "bf16" else "fp32"
    by_key = {(r["model"], float(r["width"])): r for r in rows if r.get("precision") == precision}
    training = dict(profile.training)
    if getattr(job.run, "width", None) is not None:
        training["width"] = job.run.width
    model, reason, steps, seconds, _ = _run_cost(job.run, training, by_key, precision)
    if reason is not None or not steps:
        return None
    done = checkpoint_step(job.out) or 0
    return seconds * max(steps - done, 0) / steps * RUN_OVERHEAD + RUN_START_S


def fit_runs(jobs: list, rows: list[dict] | None, profile: Profile, *, seconds: float, k_max: int) -> tuple[list, int, str]:
    """The queue fitted to the budget: which queued jobs to start (in queue order) and K, so that every run started can
    finish in ``seconds``, whatever the GPU's speed. Conservatively, runs side by side are assumed to gain nothing
    over one after another (the sum of their projected times, :func:`run_seconds`, must fit); K = how many were
    chosen, at most ``k_max`` (memory, CPU cores). None fit (a slow GPU, or no benchmark row): no run starts, and
    the campaign still brings back the test lane, the benchmark and the summary."""
    chosen, used, costs = [], 0.0, []
    for job in jobs:
        cost = run_seconds(job, rows, profile)
        if cost is None or used + cost > seconds:
            if not chosen:
                why = ("no benchmark row for it" if cost is None else
                       f"it would take {cost:.0f} s (projected) and {seconds:.0f} s are left")
                return [], 1, f"fit: no run can finish in this budget: the first queued, {job.name}: {why}"
            break
        chosen.append(job)
        costs.append(cost)
        used += cost
    k = max(1, min(k_max, len(chosen)))
    return chosen, k, (f"fit: {len(chosen)} run(s) of projected {', '.join(f'{c:.0f}' for c in costs)} s "
                       f"(sum {used:.0f} s) in the {seconds:.0f} s left, K = {k} (at most {k_max})")
