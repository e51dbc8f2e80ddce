"""Per-step cost of Algorithm 1 against non-private training, model by model (``python -m dirdp bench``).

A step = forward, loss, backward and SGD update on a fixed batch of the paper's size for that
model's data set. "non-private" uses cross-entropy on the logits, "Algorithm 1" the Dirichlet
mechanism's loss; everything else is identical. The two are timed interleaved (so drifts in
machine load hit both alike) and summarised by their medians and their ratio.

:func:`campaign_bench` adds DP-SGD (Opacus, on the GroupNorm twin), precisions (fp32, bf16 autocast
with channels_last) and peak CUDA memory, for a GPU; :func:`project` turns its rows into the GPU time
of a Table-1 cell and of a whole profile; :func:`print_campaign_bench` prints both.
"""

from __future__ import annotations

import copy
import math
import statistics
import time

import torch
import torch.nn.functional as F

from dirdp.data import get_spec
from dirdp.mechanism import dirichlet_nll
from dirdp.models import build_model
from dirdp.presets import PRESETS

# model -> the data set whose shape and batch size it is benchmarked with (Section 4.1)
BENCH_SETS = {"inception": "mnist", "resnet18": "cifar10", "resnet9": "dermamnist"}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _bench_set(name: str) -> str:
    """The data set model ``name`` is benchmarked on; Papernot's CNN on MNIST's shape."""
    return "mnist" if name == "papernot_cnn" else BENCH_SETS[name]


def _setup(name: str, width: float, dev: torch.device, *, opacus_compatible: bool = False):
    """(preset, model, x, y, generator): the paper's model (seed 0; GroupNorm instead of BatchNorm
    if ``opacus_compatible``) on ``dev``, and one fixed batch of the preset's size from ``generator``,
    which also draws the mechanism's (and DP-SGD's) noise."""
    preset = PRESETS[_bench_set(name)]
    spec = get_spec(preset.name)
    torch.manual_seed(0)
    model = build_model(name, num_classes=spec.num_classes, in_channels=spec.channels, width=width,
                        image_size=spec.size)
    if opacus_compatible:
        from dirdp.baselines import dpsgd

        model = dpsgd.make_compatible(model)
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(preset.batch_size, spec.channels, spec.size, spec.size, device=dev, generator=g)
    y = torch.randint(0, spec.num_classes, (preset.batch_size,), device=dev, generator=g)
    return preset, model.to(dev), x, y, g


def _cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), y)


def _losses(g: torch.Generator, r: float, alpha: float) -> dict:
    """kind -> loss(logits, y): cross-entropy (non-private) or the Dirichlet mechanism's (Algorithm 1)."""
    return {"nonprivate": _cross_entropy,
            "alg1": lambda z, y: dirichlet_nll(z, y, r=r, alpha=alpha, generator=g)}


def _step(model, opt, x, y, loss, dev: torch.device, bf16: bool = False):
    """A timed step: forward (bf16 autocast if asked), loss, backward, optimizer step; seconds,
    CUDA synchronised on both ends."""
    def step() -> float:
        _sync(dev)
        t0 = time.perf_counter()
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
        value = loss(logits, y)
        opt.zero_grad(set_to_none=True)
        value.backward()
        opt.step()
        _sync(dev)
        return time.perf_counter() - t0
    step.optimizer = opt
    return step


def _interleaved(steps: dict, reps: int, warmup: int = 2) -> dict:
    """Median seconds per kind of step, the kinds timed interleaved after ``warmup`` rounds
    (allocator, kernels, autotuning)."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    times = {k: [] for k in steps}
    for _ in range(reps):
        for k, step in steps.items():
            times[k].append(step())
    return {k: statistics.median(v) for k, v in times.items()}


def _peak_memory(steps: dict, dev: torch.device) -> dict:
    """Each kind's peak CUDA memory (GiB) over one more, untimed, step, the gradients (and Opacus'
    per-example gradients) of every kind freed before it; None off CUDA."""
    peaks = {k: None for k in steps}
    if dev.type != "cuda":
        return peaks
    for k, step in steps.items():
        for other in steps.values():
            other.optimizer.zero_grad(set_to_none=True)
        torch.cuda.reset_peak_memory_stats(dev)
        step()
        peaks[k] = torch.cuda.max_memory_allocated(dev) / 2**30
    return peaks


def bench_model(name: str, *, width: float = 1.0, reps: int = 5, device: str = "cpu", bf16: bool = False,
                channels_last: bool = False, r: float = 0.2349, alpha: float = 3.0) -> dict:
    """Median seconds per step, non-private and Algorithm 1, for model ``name``."""
    dev = torch.device(device)
    preset, model, x, y, g = _setup(name, width, dev)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    losses = _losses(g, r, alpha)
    med = _interleaved({k: _step(model, opt, x, y, losses[k], dev, bf16) for k in ("nonprivate", "alg1")}, reps)
    t_plain, t_private = med["nonprivate"], med["alg1"]
    return dict(model=name, width=width, batch=preset.batch_size, device=str(dev), threads=torch.get_num_threads(),
                bf16=bf16, channels_last=channels_last, reps=reps, nonprivate_s=t_plain, algorithm1_s=t_private,
                ratio=t_private / t_plain, steps_per_s=1.0 / t_private)


def _dpsgd_step(net, x, y, g, dev: torch.device, bf16: bool, noise_multiplier: float = 1.0):
    """The timed DP-SGD step (Opacus: per-example gradients, clipping to C = 1, noise from ``g``) of
    the Opacus-compatible model ``net``, on the fixed batch (x, y)."""
    from dirdp.baselines import dpsgd

    n = len(y) * 100
    dp_model, dp_opt = dpsgd.make_private(net, torch.optim.SGD(net.parameters(), lr=1e-6), n=n, q=0.01,
                                          noise_multiplier=noise_multiplier, generator=g)
    return _step(dp_model, dp_opt, x, y, _cross_entropy, dev, bf16)


def bench_baselines(name: str, *, width: float = 1.0, reps: int = 5, r: float = 0.2349, alpha: float = 3.0,
                    noise_multiplier: float = 1.0) -> dict:
    """Median seconds per step of non-private SGD, Algorithm 1 and DP-SGD (Opacus: per-example
    gradients, clipping to C = 1, noise) on the *same* model, the Opacus-compatible one
    (BatchNorm -> GroupNorm), and the same batch; timed interleaved. ``name`` may also be
    ``papernot_cnn`` (the tempered-sigmoid CNN) on MNIST's shape."""
    dev = torch.device("cpu")
    preset, net, x, y, g = _setup(name, width, dev, opacus_compatible=True)
    plain_opt = torch.optim.SGD(net.parameters(), lr=1e-6)
    twin = copy.deepcopy(net)  # same architecture and weights; Opacus' hooks stay off the non-private one
    losses = _losses(g, r, alpha)
    steps = {k: _step(net, plain_opt, x, y, losses[k], dev) for k in ("nonprivate", "alg1")}
    steps["dpsgd"] = _dpsgd_step(twin, x, y, g, dev, False, noise_multiplier)
    med = _interleaved(steps, reps)
    return dict(model=name, width=width, batch=preset.batch_size, norm="GroupNorm (Opacus-compatible)",
                threads=torch.get_num_threads(), reps=reps,
                nonprivate_s=med["nonprivate"], algorithm1_s=med["alg1"], dpsgd_s=med["dpsgd"],
                dpsgd_over_algorithm1=med["dpsgd"] / med["alg1"])


def main(models, *, width: float, reps: int, device: str, bf16: bool, channels_last: bool,
         baselines: bool = False) -> list[dict]:
    rows = []
    print(f"device {device}, {torch.get_num_threads()} torch thread(s); medians of {reps} interleaved steps")
    print(f"{'model':10s} {'width':>5s} {'batch':>5s} {'non-private s/step':>19s} {'Algorithm 1 s/step':>19s} "
          f"{'ratio':>6s}")
    for name in models:
        row = bench_model(name, width=width, reps=reps, device=device, bf16=bf16, channels_last=channels_last)
        rows.append(row)
        print(f"{name:10s} {width:5g} {row['batch']:5d} {row['nonprivate_s']:19.4f} {row['algorithm1_s']:19.4f} "
              f"{row['ratio']:6.3f}", flush=True)
    if baselines:
        print(f"\nsame Opacus-compatible model (GroupNorm), same batch:\n{'model':12s} {'width':>5s} {'batch':>5s} "
              f"{'non-private':>11s} {'Algorithm 1':>11s} {'DP-SGD':>9s} {'DP-SGD / Alg. 1':>15s}")
        for name in [*models, "papernot_cnn"]:
            row = bench_baselines(name, width=width if name != "papernot_cnn" else 1.0, reps=reps)
            rows.append(row)
            print(f"{name:12s} {row['width']:5g} {row['batch']:5d} {row['nonprivate_s']:11.4f} {row['algorithm1_s']:11.4f} "
                  f"{row['dpsgd_s']:9.4f} {row['dpsgd_over_algorithm1']:15.2f}", flush=True)
    return rows


# ---------------------------------------------------------------------------------------- GPU campaign

# precision -> (bf16 autocast, channels_last for model and input)
PRECISIONS = {"fp32": (False, False), "fp32+cl": (False, True), "bf16": (True, False), "bf16+cl": (True, True)}


def _to_format(model: torch.nn.Module, x: torch.Tensor, channels_last: bool):
    if not channels_last:
        return model, x
    return model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)


def _campaign_dpsgd(name: str, width: float, dev: torch.device, bf16: bool, channels_last: bool):
    """DP-SGD's timed step on the Opacus-compatible (GroupNorm) model, after one untimed step: raises
    if Opacus is missing or cannot run this model at this precision."""
    _, net, x, y, g = _setup(name, width, dev, opacus_compatible=True)
    net, x = _to_format(net, x, channels_last)
    step = _dpsgd_step(net, x, y, g, dev, bf16)
    step()
    return step


def _opacus_missing() -> str | None:
    """Why Opacus cannot be imported here, or None if it can."""
    try:
        import opacus  # noqa: F401 - only whether it imports
    except ImportError as e:
        return f"opacus not importable: {type(e).__name__}: {e}"
    return None


def _campaign_row(name: str, width: float, dev: torch.device, precision: str, *, reps: int, warmup: int,
                  dpsgd: bool | str, r: float, alpha: float) -> dict:
    """One row of :func:`campaign_bench`; ``dpsgd`` is True, False or why DP-SGD cannot run."""
    bf16, channels_last = PRECISIONS[precision]
    preset, model, x, y, g = _setup(name, width, dev)
    model, x = _to_format(model, x, channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    losses = _losses(g, r, alpha)
    steps = {k: _step(model, opt, x, y, losses[k], dev, bf16) for k in ("nonprivate", "alg1")}
    note = dpsgd if isinstance(dpsgd, str) else None if dpsgd else "not asked (dpsgd=False)"
    if dpsgd is True:
        try:
            steps["dpsgd"] = _campaign_dpsgd(name, width, dev, bf16, channels_last)
        except Exception as e:  # noqa: BLE001 - Opacus cannot run this model at this precision: the row goes on
            note = f"Opacus failed at {precision}: {type(e).__name__}: {e}"[:400]
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    med, peak = _interleaved(steps, reps, warmup), _peak_memory(steps, dev)
    t_dp = med.get("dpsgd")
    return dict(model=name, width=width, batch=preset.batch_size, precision=precision, device=str(dev),
                device_name=torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                threads=torch.get_num_threads(), torch=torch.__version__, reps=reps,
                nonprivate_s=med["nonprivate"], algorithm1_s=med["alg1"], dpsgd_s=t_dp, dpsgd_note=note,
                dpsgd_model="GroupNorm (Opacus-compatible)" if name != "papernot_cnn" else "as published (no norm)",
                peak_mem_gib={"nonprivate": peak["nonprivate"], "algorithm1": peak["alg1"], "dpsgd": peak.get("dpsgd")},
                dpsgd_over_algorithm1=None if t_dp is None else t_dp / med["alg1"],
                algorithm1_over_nonprivate=med["alg1"] / med["nonprivate"])


def campaign_bench(models=("inception", "resnet18"), *, device: str = "cuda", width: float = 1.0, reps: int = 10,
                   precisions=("fp32", "bf16+cl"), dpsgd: bool = True, warmup: int = 2, r: float = 0.2349,
                   alpha: float = 3.0) -> list[dict]:
    """One row per model and precision (a key of :data:`PRECISIONS`: "fp32" = float32, contiguous;
    "bf16+cl" = bf16 autocast, channels_last model and input): median seconds per step of non-private
    SGD and Algorithm 1 on the paper's (BatchNorm) model, and of DP-SGD (Opacus) on its GroupNorm
    twin, timed interleaved on the paper's batch for the model's data set (Section 4.1), with each
    method's peak CUDA memory (GiB; None off CUDA). ``dpsgd_s`` is None, with the reason in
    ``dpsgd_note``, when Opacus is missing or fails at that precision. ``papernot_cnn`` (the
    tempered-sigmoid CNN, MNIST's shape) is always benchmarked at width 1, as it is trained."""
    dev = torch.device(device)
    unknown = [p for p in precisions if p not in PRECISIONS]
    if unknown:
        raise ValueError(f"unknown precision(s) {unknown}. Known: {', '.join(PRECISIONS)}.")
    if dpsgd:
        dpsgd = _opacus_missing() or True
    rows = []
    for name in models:
        for precision in precisions:
            rows.append(_campaign_row(name, 1.0 if name == "papernot_cnn" else width, dev, precision, reps=reps,
                                      warmup=warmup, dpsgd=dpsgd, r=r, alpha=alpha))
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    return rows


def _run_cost(run, training: dict, rows: dict, precision: str) -> tuple:
    """(model, reason, steps, seconds, batch scaled?) of one training run from the benchmark rows
    (by (model, width)); reason is None if the run is projected, else why not (and the rest None)."""
    preset = PRESETS[run.dataset]
    if run.method == "latent":
        return "latent", "LATENT: its own model and training, not benchmarked", None, None, None
    model = "papernot_cnn" if run.method == "tempered" else preset.model
    width = 1.0 if run.method == "tempered" else float(training.get("width") or 1.0)
    row = rows.get((model, width))
    if row is None:
        return model, f"no {precision} row for {model} at width {width:g}", None, None, None
    private = math.isfinite(run.eps)
    if run.method == "alg1":
        key = "algorithm1_s" if private else "nonprivate_s"
    elif private:
        key = "dpsgd_s"
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
    training run of ``profile`` (a path to a profile YAML, or a :class:`dirdp.experiments.Profile`),
    run after run. Runs with no measured row (LATENT, a model or width not benchmarked, DP-SGD where
    Opacus failed) are counted in ``not_projected`` by reason, never dropped silently."""
    from dirdp.experiments import Profile

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
        mem = "/".join(num(r["peak_mem_gib"][k], ".2f") for k in ("nonprivate", "algorithm1", "dpsgd"))
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


def campaign_main(models=("inception", "resnet18", "resnet9", "papernot_cnn"), *, width: float = 1.0, reps: int = 10,
                  device: str = "cuda", json_out: str | None = None, precisions=("fp32", "bf16+cl")) -> int:
    """``python -m dirdp bench --campaign``: :func:`campaign_bench` model by model (each written to
    ``json_out`` as soon as it is measured, so a cut-off run keeps what it had), then the projections for the
    paper profile (fp32 and bf16 + channels_last) and the gpu profile (fp32)."""
    import json
    from pathlib import Path

    from dirdp.provenance import jsonable

    rows: list[dict] = []
    record: dict = dict(device=device, width=width, reps=reps, rows=rows, projection=None, projections=[])

    def save():
        if json_out:
            Path(json_out).write_text(json.dumps(jsonable(record), indent=1, default=str) + "\n")

    for name in models:
        rows += campaign_bench((name,), device=device, width=width, reps=reps, precisions=precisions)
        save()
    config = Path(__file__).resolve().parents[1] / "config"
    for profile, precision in (("paper", precisions[0]), ("paper", precisions[-1]), ("gpu", precisions[0])):
        record["projections"].append(project(rows, config / f"{profile}.yaml", precision=precision))
    record["projection"] = record["projections"][0]
    save()
    print_campaign_bench(rows, record["projection"])
    for p in record["projections"][1:]:
        print(f"\nprofile '{p['profile']}' at {p['precision']}: {p['n_projected']} of {p['n_runs']} runs, serially "
              f"{_hours(p['profile_serial_s'])}; one Table-1 cell {_hours(p['table1_cell_s'])}")
    return 0
