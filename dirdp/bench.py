"""Per-step cost of Algorithm 1 against non-private training, model by model (``python -m dirdp bench``).

A step = forward, loss, backward and SGD update on a fixed batch of the paper's size for that
model's data set. "non-private" uses cross-entropy on the logits, "Algorithm 1" the Dirichlet
mechanism's loss; everything else is identical. The two are timed interleaved (so drifts in
machine load hit both alike) and summarised by their medians and their ratio.
"""

from __future__ import annotations

import copy
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


def bench_model(name: str, *, width: float = 1.0, reps: int = 5, device: str = "cpu", bf16: bool = False,
                channels_last: bool = False, r: float = 0.2349, alpha: float = 3.0) -> dict:
    """Median seconds per step, non-private and Algorithm 1, for model ``name``."""
    dev = torch.device(device)
    preset = PRESETS[BENCH_SETS[name]]
    spec = get_spec(preset.name)
    torch.manual_seed(0)
    model = build_model(name, num_classes=spec.num_classes, in_channels=spec.channels, width=width).to(dev)
    g = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(preset.batch_size, spec.channels, spec.size, spec.size, device=dev, generator=g)
    y = torch.randint(0, spec.num_classes, (preset.batch_size,), device=dev, generator=g)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)

    def step(private: bool) -> float:
        _sync(dev)
        t0 = time.perf_counter()
        with torch.autocast(device_type=dev.type, dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
        loss = dirichlet_nll(logits, y, r=r, alpha=alpha, generator=g) if private else F.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        _sync(dev)
        return time.perf_counter() - t0

    for _ in range(2):  # warm-up (allocator, kernels, autotuning)
        step(False)
        step(True)
    plain, private = [], []
    for _ in range(reps):
        plain.append(step(False))
        private.append(step(True))
    t_plain, t_private = statistics.median(plain), statistics.median(private)
    return dict(model=name, width=width, batch=preset.batch_size, device=str(dev), threads=torch.get_num_threads(),
                bf16=bf16, channels_last=channels_last, reps=reps, nonprivate_s=t_plain, algorithm1_s=t_private,
                ratio=t_private / t_plain, steps_per_s=1.0 / t_private)


def bench_baselines(name: str, *, width: float = 1.0, reps: int = 5, r: float = 0.2349, alpha: float = 3.0,
                    noise_multiplier: float = 1.0) -> dict:
    """Median seconds per step of non-private SGD, Algorithm 1 and DP-SGD (Opacus: per-example
    gradients, clipping to C = 1, noise) on the *same* model, the Opacus-compatible one
    (BatchNorm -> GroupNorm), and the same batch; timed interleaved. ``name`` may also be
    ``papernot_cnn`` (the tempered-sigmoid CNN) on MNIST's shape."""
    from dirdp.baselines import dpsgd

    preset = PRESETS["mnist" if name == "papernot_cnn" else BENCH_SETS[name]]
    spec = get_spec(preset.name)
    torch.manual_seed(0)
    net = dpsgd.make_compatible(build_model(name, num_classes=spec.num_classes, in_channels=spec.channels,
                                            width=width, image_size=spec.size))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(preset.batch_size, spec.channels, spec.size, spec.size, generator=g)
    y = torch.randint(0, spec.num_classes, (preset.batch_size,), generator=g)
    plain_opt = torch.optim.SGD(net.parameters(), lr=1e-6)
    twin = copy.deepcopy(net)  # same architecture and weights; Opacus' hooks stay off the non-private one
    dp_model, dp_opt = dpsgd.make_private(twin, torch.optim.SGD(twin.parameters(), lr=1e-6), n=preset.batch_size * 100,
                                          q=0.01, noise_multiplier=noise_multiplier, generator=g)

    def step(kind: str) -> float:
        t0 = time.perf_counter()
        if kind == "dpsgd":
            loss = F.cross_entropy(dp_model(x), y)
            dp_opt.zero_grad(set_to_none=True)
            loss.backward()
            dp_opt.step()
        else:
            logits = net(x)
            loss = dirichlet_nll(logits, y, r=r, alpha=alpha, generator=g) if kind == "alg1" else F.cross_entropy(logits, y)
            plain_opt.zero_grad(set_to_none=True)
            loss.backward()
            plain_opt.step()
        return time.perf_counter() - t0

    kinds = ("nonprivate", "alg1", "dpsgd")
    for _ in range(2):
        for k in kinds:
            step(k)
    times = {k: [] for k in kinds}
    for _ in range(reps):
        for k in kinds:
            times[k].append(step(k))
    med = {k: statistics.median(v) for k, v in times.items()}
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
