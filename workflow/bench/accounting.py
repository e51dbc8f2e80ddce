"""The speed of the core, no model (``python -m workflow bench --core``; ``benchmarks/bench_core.py`` calls it): one r*
solve, the Table 7 grid, and the mechanism's loss beside plain cross-entropy, each the median of repeated calls on one
thread.

Targets: one r* solve <= 20 ms, the Table 7 grid <= 1 s (the paper: "less than one minute" per epsilon); the
mechanism's forward+backward for a [250, 10] batch is reported next to cross-entropy's.
"""

from __future__ import annotations

import statistics
import time

R_SOLVE_TARGET_S = 0.020
TABLE7_TARGET_S = 1.0


def median_time(fn, reps: int, *, warmup: int = 1) -> float:
    """The median wall time of ``reps`` calls of ``fn`` after ``warmup`` untimed calls, in seconds."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def core_bench() -> list[dict]:
    """The rows: what was timed, its median seconds, the repetitions and the target where there is one."""
    import torch
    import torch.nn.functional as F

    from dirdp import accountant
    from dirdp.mechanism import dirichlet_nll
    from dirdp.presets import PRESETS, TABLE7_RSTAR
    from workflow.report import tables

    p = PRESETS["cifar10"]
    rows = [dict(what="r* solve (cifar10, eps=1)", reps=50, target_s=R_SOLVE_TARGET_S, seconds=median_time(
        lambda: accountant.rstar(eps=1.0, alpha=3.0, q=p.q, steps=p.steps, delta=p.delta), 50))]
    cells = [(PRESETS[name], eps) for name, row in TABLE7_RSTAR.items() for eps in row]
    rows.append(dict(what=f"Table 7, {len(cells)} printed cells (r* only)", reps=5, target_s=TABLE7_TARGET_S,
                     seconds=median_time(lambda: [accountant.rstar(eps=e, alpha=3.0, q=c.q, steps=c.steps,
                                                                   delta=c.delta) for c, e in cells], 5)))
    rows.append(dict(what="Table 7, full audit table (36 cells, floors, eps at paper r*)", reps=3, target_s=None,
                     seconds=median_time(tables.table7, 3)))

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(250, 10, generator=g)
    y = torch.randint(0, 10, (250,), generator=g)

    def step(loss_fn):
        z = logits.clone().requires_grad_(True)
        loss_fn(z).backward()

    losses = {"cross-entropy": lambda z: F.cross_entropy(z, y),
              "Dirichlet mechanism": lambda z: dirichlet_nll(z, y, r=0.2349, alpha=3.0, generator=g)}
    rows += [dict(what=f"loss fwd+bwd [250,10], {name}", reps=2000, target_s=None,
                  seconds=median_time(lambda fn=fn: step(fn), 2000)) for name, fn in losses.items()]
    return rows


def core_text(rows: list[dict]) -> str:
    """The rows as lines: each time beside its target (and the ratio to it), the mechanism's loss beside
    cross-entropy's."""
    loss = [r for r in rows if r["what"].startswith("loss")]
    lines = []
    for r in (r for r in rows if r not in loss):
        target = (f"   (target <= {r['target_s'] * 1e3:g} ms; ratio to target {r['seconds'] / r['target_s']:.3f})"
                  if r["target_s"] else "")
        lines.append(f"{r['what']}: {r['seconds'] * 1e3:8.2f} ms{target}")
    ce, mech = (r["seconds"] for r in loss)
    lines.append(f"loss fwd+bwd [250,10]: cross-entropy {ce * 1e6:7.1f} us, Dirichlet mechanism {mech * 1e6:7.1f} us, "
                 f"ratio {mech / ce:.2f}x (absolute overhead {(mech - ce) * 1e6:.0f} us per step)")
    return "\n".join(lines)
