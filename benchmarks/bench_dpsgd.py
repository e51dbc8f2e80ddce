"""The fastest DP-SGD step available here for the paper's Inception at full width, beside Algorithm 1's.

DP-SGD needs a per-example gradient norm, so its model is the Opacus-compatible one (BatchNorm -> GroupNorm). Timed,
each on the same fixed batch of 250 MNIST-shaped images (C = 1, noise multiplier 1, SGD), interleaved round by round:

- ``alg1 bf16+cl (BatchNorm)``: Algorithm 1 as the campaign trains it (the reference of every ratio);
- ``alg1 fp32 (GroupNorm)``: Algorithm 1 on DP-SGD's model;
- ``opacus hooks fp32``: DP-SGD as this repository trains it (``dirdp.baselines.dpsgd.make_private``);
- ``opacus hooks bf16``: the same under bf16 autocast + channels_last;
- ``opacus ghost fp32``: Opacus' fast gradient clipping (``grad_sample_mode="ghost"``: per-example norms without
  materialising every per-example gradient where a layer supports it, then a second backward);
- ``torch.func fp32`` / ``torch.func bf16``: per-example gradients with ``vmap(grad(...))`` over the batch, clipped,
  summed and noised by hand (what Opacus does, without its hooks).

A variant that fails says why in its row. The decision it serves (``workflow.report.step_cost.decision``): if the
fastest DP-SGD step is within 3x of Algorithm 1's, DP-SGD can be trained at full width beside Algorithm 1 on these
CPUs. notebooks/dpsgd_step_cost.ipynb draws the bench (figures/<profile>/dpsgd_step_cost.png).

    python benchmarks/bench_dpsgd.py --json-out results/cpu/bench_dpsgd_full_width.json   # ~15 min, 1 thread
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import warnings

import torch
import torch.nn.functional as F

NOISE, C, LR = 1.0, 1.0, 1e-6


def _timed(fn):
    def step():
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    return step


def _alg1(width: float, *, batchnorm: bool):
    from workflow.bench.core import ALG1, _losses, _setup, _step

    dev = torch.device("cpu")
    _, model, x, y, g = _setup("inception", width, dev, opacus_compatible=not batchnorm, channels_last=batchnorm)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    return _step(model, opt, x, y, _losses(g, 0.2771, 3.0)[ALG1], dev, bf16=batchnorm)


def _opacus(width: float, *, mode: str, bf16: bool):
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    from workflow.bench.core import _setup

    _, model, x, y, g = _setup("inception", width, torch.device("cpu"), opacus_compatible=True, channels_last=bf16)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loader = DataLoader(TensorDataset(torch.zeros(len(y) * 100, 1)), batch_size=len(y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="rdp")
        if mode == "ghost":
            module, dp_opt, criterion, _ = engine.make_private(
                module=model, optimizer=opt, data_loader=loader, noise_multiplier=NOISE, max_grad_norm=C,
                poisson_sampling=True, noise_generator=g, criterion=torch.nn.CrossEntropyLoss(),
                grad_sample_mode="ghost")
        else:
            module, dp_opt, _ = engine.make_private(module=model, optimizer=opt, data_loader=loader,
                                                    noise_multiplier=NOISE, max_grad_norm=C, poisson_sampling=True,
                                                    noise_generator=g)
            criterion = torch.nn.CrossEntropyLoss()

    def step():
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = module(x)
        loss = criterion(logits.float(), y)
        loss.backward()
        dp_opt.step()
        dp_opt.zero_grad(set_to_none=True)
    return _timed(step)


def _func(width: float, *, bf16: bool):
    from torch.func import functional_call, grad, vmap

    from workflow.bench.core import _setup

    _, model, x, y, g = _setup("inception", width, torch.device("cpu"), opacus_compatible=True)
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())
    expected = float(len(y))

    def loss(p, xi, yi):
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=bf16):
            out = functional_call(model, (p, buffers), (xi[None],))
        return F.cross_entropy(out.float(), yi[None])

    per_example = vmap(grad(loss), in_dims=(None, 0, 0))

    def step():
        per = per_example(params, x, y)
        norms = torch.sqrt(sum((v.reshape(len(y), -1).float() ** 2).sum(1) for v in per.values()))
        scale = (C / (norms + 1e-6)).clamp(max=1.0)
        for k, v in per.items():
            total = (v * scale.view(-1, *[1] * (v.dim() - 1)).to(v.dtype)).sum(0)
            noisy = total + NOISE * C * torch.randn(total.shape, generator=g, dtype=total.dtype)
            params[k] = params[k] - LR * noisy / expected
    return _timed(step)


VARIANTS = {
    "alg1 bf16+cl (BatchNorm)": lambda w: _alg1(w, batchnorm=True),
    "alg1 fp32 (GroupNorm)": lambda w: _alg1(w, batchnorm=False),
    "opacus hooks fp32": lambda w: _opacus(w, mode="hooks", bf16=False),
    "opacus hooks bf16": lambda w: _opacus(w, mode="hooks", bf16=True),
    "opacus ghost fp32": lambda w: _opacus(w, mode="ghost", bf16=False),
    "torch.func fp32": lambda w: _func(w, bf16=False),
    "torch.func bf16": lambda w: _func(w, bf16=True),
}
REFERENCE = "alg1 bf16+cl (BatchNorm)"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1: one run per core)")
    ap.add_argument("--reps", type=int, default=3, help="timed rounds (default 3)")
    ap.add_argument("--width", type=float, default=1.0, help="Inception's width (default 1: the paper's)")
    ap.add_argument("--json-out", help="write the rows, the load and provenance here")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.reps < 1:
        print("error: --threads and --reps must be at least 1.", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    from workflow.bench import sweep

    meter = sweep.LoadMeter().start()
    steps, errors = {}, {}
    for name, make in VARIANTS.items():
        try:
            steps[name] = make(args.width)
            steps[name]()  # warm-up (and the first place a variant can fail)
        except Exception as err:  # noqa: BLE001  (a variant that does not run is a row that says why)
            steps.pop(name, None)
            errors[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
            print(f"{name:26s} fails: {errors[name]}", flush=True)
    times = {k: [] for k in steps}
    for r in range(args.reps):
        for name, step in steps.items():
            times[name].append(step())
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    ref = statistics.median(times[REFERENCE])
    rows = [dict(variant=k, median_s_per_step=statistics.median(v), over_algorithm1=statistics.median(v) / ref,
                 times_s=[round(t, 4) for t in v]) for k, v in times.items()]
    rows += [dict(variant=k, error=e) for k, e in errors.items()]
    from workflow.report.step_cost import DPSGD, family

    dp = [r for r in rows if family(r["variant"]) == DPSGD and "error" not in r]
    fastest = min(dp, key=lambda r: r["median_s_per_step"]) if dp else None
    for r in rows:
        if "error" not in r:
            print(f"{r['variant']:26s} {r['median_s_per_step']:8.2f} s/step  {r['over_algorithm1']:5.2f}x Algorithm 1")
    if fastest:
        from workflow.report.step_cost import WITHIN

        print(f"fastest DP-SGD: {fastest['variant']}, {fastest['over_algorithm1']:.2f}x Algorithm 1's step "
              f"({'within' if fastest['over_algorithm1'] <= WITHIN else 'over'} {WITHIN:g}x)")
    load = meter.stop()
    if args.json_out:
        from pathlib import Path

        from dirdp.provenance import collect

        refused = sweep.refuse_busy_results_json(args.json_out, dict(load=load))
        if refused:
            print(f"error: {refused}", file=sys.stderr)
            return 2
        config = dict(command="python benchmarks/bench_dpsgd.py " + " ".join(argv if argv is not None else sys.argv[1:]),
                      model="inception", width=args.width, batch=250, threads=args.threads, reps=args.reps,
                      noise_multiplier=NOISE, max_grad_norm=C)
        Path(args.json_out).write_text(json.dumps(dict(rows=rows, reference=REFERENCE,
                                                       fastest_dpsgd=fastest and fastest["variant"],
                                                       fastest_over_algorithm1=fastest and fastest["over_algorithm1"],
                                                       load=load, provenance=collect(config)), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
