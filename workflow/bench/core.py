"""Per-step cost of Algorithm 1 against non-private training, model by model (``python -m workflow bench``).

A step = forward, loss, backward and SGD update on a fixed batch of the paper's size for that
model's data set. "non-private" uses cross-entropy on the logits, "Algorithm 1" the Dirichlet
mechanism's loss; everything else is identical. The two are timed interleaved (so drifts in
machine load hit both alike) and summarised by their medians and their ratio. :func:`bench_baselines`
adds DP-SGD (Opacus) on the Opacus-compatible (GroupNorm) twin, on CPU.
"""

from __future__ import annotations

import copy
import statistics
import time

import torch
import torch.nn.functional as F

from dirdp import methods
from dirdp.data import get_spec
from dirdp.mechanism import dirichlet_nll
from dirdp.models import build_model
from dirdp.presets import PRESETS
from workflow.bench.projection import ALG1, DPSGD, NONPRIVATE  # the kinds of timed step

# model -> the data set whose shape and batch size it is benchmarked with (Section 4.1)
BENCH_SETS = {"inception": "mnist", "resnet18": "cifar10", "resnet9": "dermamnist"}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _bench_set(name: str) -> str:
    """The data set model ``name`` is benchmarked on; Papernot's CNN on MNIST's shape."""
    return "mnist" if name == "papernot_cnn" else BENCH_SETS[name]


def _setup(name: str, width: float, dev: torch.device, *, opacus_compatible: bool = False, batch: int | None = None,
           channels_last: bool = False):
    """(preset, model, x, y, generator): the paper's model (seed 0; GroupNorm instead of BatchNorm
    if ``opacus_compatible``) on ``dev``, and one fixed batch of the preset's size from ``generator``,
    which also draws the mechanism's (and DP-SGD's) noise; model and batch in channels_last memory format if
    ``channels_last``."""
    preset = PRESETS[_bench_set(name)]
    spec = get_spec(preset.name)
    torch.manual_seed(0)
    model = build_model(name, num_classes=spec.num_classes, in_channels=spec.channels, width=width,
                        image_size=spec.size)
    if opacus_compatible:
        from dirdp.baselines import dpsgd

        model = dpsgd.make_compatible(model)
    g = torch.Generator(device=dev).manual_seed(0)
    n = batch or preset.batch_size  # ``batch``: a smaller one (the campaign's smoke mode), else the paper's
    x = torch.randn(n, spec.channels, spec.size, spec.size, device=dev, generator=g)
    y = torch.randint(0, spec.num_classes, (n,), device=dev, generator=g)
    model = model.to(dev)
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    return preset, model, x, y, g


def _cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), y)


def _losses(g: torch.Generator, r: float, alpha: float) -> dict:
    """kind -> loss(logits, y): cross-entropy (non-private) or the Dirichlet mechanism's (Algorithm 1)."""
    return {NONPRIVATE: _cross_entropy,
            ALG1: lambda z, y: dirichlet_nll(z, y, r=r, alpha=alpha, generator=g)}


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
    preset, model, x, y, g = _setup(name, width, dev, channels_last=channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    losses = _losses(g, r, alpha)
    med = _interleaved({k: _step(model, opt, x, y, losses[k], dev, bf16) for k in (NONPRIVATE, ALG1)}, reps)
    t_plain, t_private = med[NONPRIVATE], med[ALG1]
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
    steps = {k: _step(net, plain_opt, x, y, losses[k], dev) for k in (NONPRIVATE, ALG1)}
    steps[DPSGD] = _dpsgd_step(twin, x, y, g, dev, False, noise_multiplier)
    med = _interleaved(steps, reps)
    return dict(model=name, width=width, batch=preset.batch_size, norm="GroupNorm (Opacus-compatible)",
                threads=torch.get_num_threads(), reps=reps,
                nonprivate_s=med[NONPRIVATE], algorithm1_s=med[ALG1], dpsgd_s=med[DPSGD],
                dpsgd_over_algorithm1=med[DPSGD] / med[ALG1])


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
              f"{'non-private':>11s} {methods.label(ALG1):>11s} {methods.label(DPSGD):>9s} {'DP-SGD / Alg. 1':>15s}")
        for name in [*models, "papernot_cnn"]:
            row = bench_baselines(name, width=width if name != "papernot_cnn" else 1.0, reps=reps)
            rows.append(row)
            print(f"{name:12s} {row['width']:5g} {row['batch']:5d} {row['nonprivate_s']:11.4f} {row['algorithm1_s']:11.4f} "
                  f"{row['dpsgd_s']:9.4f} {row['dpsgd_over_algorithm1']:15.2f}", flush=True)
    return rows
