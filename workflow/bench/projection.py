"""Projections from :func:`workflow.bench.campaign_bench` rows: the GPU time of a Table-1 cell and of a whole
profile (:func:`project`), and both printed with the rows (:func:`print_campaign_bench`)."""

from __future__ import annotations

import math

from dirdp import methods
from dirdp.presets import PRESETS

# the kinds of timed step, and their keys in the rows' dicts: plain cross-entropy (no method: what eps = inf trains;
# "nonprivate" in the rows) and the methods' own steps, under their registry keys
NONPRIVATE = "nonprivate"
ALG1, DPSGD = methods.ALG1, methods.DPSGD


def _run_cost(run, training: dict, rows: dict, precision: str) -> tuple:
    """(model, reason, steps, seconds, batch scaled?) of one training run from the benchmark rows
    (by (model, width)); reason is None if the run is projected, else why not (and the rest None)."""
    preset = PRESETS[run.dataset]
    spec = methods.spec(run.method)  # what the method trains (its model, at the profile's width or as published)
    if spec.bench is None:           # and which column of a row times its private step
        return spec.model, f"{spec.label}: its own model and training, not benchmarked", None, None, None
    model = spec.model or preset.model
    width = float(training.get("width") or 1.0) if spec.scaled else 1.0
    row = rows.get((model, width))
    if row is None:
        return model, f"no {precision} row for {model} at width {width:g}", None, None, None
    private = math.isfinite(run.eps)
    if private:
        key = spec.bench
    elif spec.norm is None:  # eps = inf trains the run's own model (Algorithm 1's column): the benchmarked one
        key = "nonprivate_s"
    elif model == "papernot_cnn":  # no normalisation layers: its non-private model is the benchmarked one
        key = "nonprivate_s"
    else:
        return model, f"{run.method} at eps = inf (non-private GroupNorm {model}) not benchmarked", None, None, None
    if row.get(key) is None:
        why = f" ({row['dpsgd_note']})" if key == "dpsgd_s" and row.get("dpsgd_note") else ""
        return model, f"no {key} for {model} at {precision}{why}", None, None, None
    steps = int(training.get("steps") or preset.steps)
    q = run.q if run.q is not None else float(training.get("q") or preset.q)
    n = min(int(training["train_subset"]), preset.n_train) if training.get("train_subset") else preset.n_train
    scale = q * n / row["batch"]  # batch above the benchmarked one: linear; below: no cheaper
    scale = scale if scale > 1.0 + 1e-9 else 1.0
    return model, None, steps, steps * row[key] * scale, scale > 1.0


def project(rows, profile="config/paper.yaml", *, precision: str = "fp32") -> dict:
    """Projected GPU wall time, from :func:`campaign_bench` rows at ``precision``, of (a) one Table-1
    cell (ResNet-18 at width 1, Algorithm 1, T = 20000 steps of the cifar10 preset) and (b) every
    training run of ``profile`` (a path to a profile YAML, or a :class:`workflow.experiments.Profile`),
    run after run. Runs with no measured row (LATENT, a model or width not benchmarked, DP-SGD where
    Opacus failed) are counted in ``not_projected`` by reason, never dropped silently."""
    from workflow.experiments import Profile

    prof = profile if isinstance(profile, Profile) else Profile.load(profile)
    by_key = {(r["model"], float(r["width"])): r for r in rows if r["precision"] == precision}
    resnet18 = by_key.get(("resnet18", 1.0))
    cifar10 = PRESETS["cifar10"]
    table1 = None if resnet18 is None else cifar10.steps * resnet18["algorithm1_s"]
    total, scaled, reasons, breakdown = 0.0, 0, {}, {}
    runs = list(prof.all_runs().values())
    for run in runs:
        model, reason, steps, seconds, was_scaled = _run_cost(run, prof.training, by_key, precision)
        if reason is not None:
            reasons[reason] = reasons.get(reason, 0) + 1
            continue
        total += seconds
        scaled += was_scaled
        b = breakdown.setdefault((run.dataset, run.method), dict(dataset=run.dataset, method=run.method, model=model,
                                                                 runs=0, steps=0, seconds=0.0))
        b["runs"] += 1
        b["steps"] += steps
        b["seconds"] += seconds
    not_projected = [dict(reason=k, runs=v) for k, v in sorted(reasons.items(), key=lambda kv: -kv[1])]
    return dict(
        precision=precision, profile=prof.name, table1_cell_s=table1, table1_steps=cifar10.steps,
        profile_serial_s=total, n_runs=len(runs), n_projected=len(runs) - sum(reasons.values()),
        not_projected=not_projected, batch_scaled_runs=scaled, breakdown=list(breakdown.values()),
        assumptions=[
            "serial: one run after another on one GPU, nothing concurrent",
            "training steps only: evaluation, data loading, Poisson sampling and checkpointing not included",
            f"seconds per step: the benchmark's medians at {precision} on a fixed batch of q n examples "
            "(Poisson batches vary around it); Adam (Table 10) costed as SGD",
            "Algorithm 1 at eps = inf: a non-private step of the BatchNorm model; DP-SGD: Opacus on the GroupNorm "
            "model; tempered sigmoid: Opacus on Papernot's CNN at width 1",
            f"runs whose batch q n exceeds the benchmarked one are scaled linearly ({scaled} runs); smaller "
            "batches keep the benchmarked time (an upper bound)",
        ])


def _hours(seconds) -> str:
    return "n/a" if seconds is None else f"{seconds / 3600:.2f} h ({seconds / 60:.1f} min)"


def print_campaign_bench(rows, projection: dict | None = None) -> None:
    """The rows of :func:`campaign_bench` as an aligned table, then the projections of :func:`project`."""
    def num(v, spec):
        return "-" if v is None else format(v, spec)

    head = (f"{'model':12s} {'width':>6s} {'batch':>5s} {'precision':9s} {'non-priv s':>10s} {'Alg. 1 s':>10s} "
            f"{'DP-SGD s':>10s} {'A1/NP':>6s} {'DP/A1':>6s} {'peak GiB NP/A1/DP':>20s}")
    print(f"device {rows[0]['device'] if rows else '?'} ({rows[0]['device_name'] if rows else '?'}), "
          f"seconds per step, medians of {rows[0]['reps'] if rows else '?'} interleaved steps\n{head}")
    for r in rows:
        mem = "/".join(num(r["peak_mem_gib"][k], ".2f") for k in (NONPRIVATE, "algorithm1", DPSGD))
        print(f"{r['model']:12s} {r['width']:6g} {r['batch']:5d} {r['precision']:9s} {r['nonprivate_s']:10.4f} "
              f"{r['algorithm1_s']:10.4f} {num(r['dpsgd_s'], '10.4f'):>10s} {r['algorithm1_over_nonprivate']:6.2f} "
              f"{num(r['dpsgd_over_algorithm1'], '6.2f'):>6s} {mem:>20s}")
    for r in rows:
        if r["dpsgd_note"]:
            print(f"  DP-SGD {r['model']} {r['precision']}: {r['dpsgd_note']}")
    if projection is None:
        return
    p = projection
    print(f"\nprojection at {p['precision']}:\n  one Table-1 cell (ResNet-18, Algorithm 1, T = {p['table1_steps']}): "
          f"{_hours(p['table1_cell_s'])}\n  profile '{p['profile']}': {p['n_projected']} of {p['n_runs']} runs, "
          f"serially {_hours(p['profile_serial_s'])}")
    for b in p["breakdown"]:
        print(f"    {b['dataset']:12s} {b['method']:8s} {b['model']:12s} {b['runs']:5d} runs {_hours(b['seconds'])}")
    for n in p["not_projected"]:
        print(f"  not projected: {n['runs']} runs: {n['reason']}")
    for a in p["assumptions"]:
        print(f"  assumption: {a}")
