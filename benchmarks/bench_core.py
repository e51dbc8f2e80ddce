"""Speed of the core: one r* solve, the Table 7 grid, and the mechanism's overhead.

    python benchmarks/bench_core.py            # prints medians and ratios, one core

Targets (issue 2): one r* solve <= 20 ms, Table 7 grid <= 1 s (the paper: "less than one
minute" per epsilon); the mechanism's forward+backward for a [250, 10] batch is reported next
to plain cross-entropy.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import statistics  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from dirdp import accountant, paper  # noqa: E402
from dirdp.report import tables  # noqa: E402
from dirdp.mechanism import dirichlet_nll  # noqa: E402
from dirdp.presets import PRESETS  # noqa: E402


def median_time(fn, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    torch.set_num_threads(1)
    p = PRESETS["cifar10"]
    t_solve = median_time(lambda: accountant.rstar(eps=1.0, alpha=3.0, q=p.q, steps=p.steps, delta=p.delta), 50)
    print(f"r* solve (cifar10, eps=1):          {t_solve * 1e3:8.2f} ms   (target <= 20 ms; "
          f"ratio to target {t_solve / 0.020:.2f})")

    cells = [(PRESETS[name], eps) for name, row in paper.TABLE7_RSTAR.items() for eps in row]
    t_cells = median_time(lambda: [accountant.rstar(eps=e, alpha=3.0, q=pp.q, steps=pp.steps, delta=pp.delta)
                                   for pp, e in cells], 5)
    print(f"Table 7, {len(cells)} printed cells (r* only):  {t_cells * 1e3:8.1f} ms   (target <= 1 s; "
          f"ratio {t_cells / 1.0:.3f})")
    t_full = median_time(tables.table7, 3)
    print(f"Table 7, full audit table (36 cells, floors, eps at paper r*): {t_full * 1e3:.1f} ms")

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(250, 10, generator=g)
    y = torch.randint(0, 10, (250,), generator=g)

    def step(loss_fn):
        z = logits.clone().requires_grad_(True)
        loss_fn(z).backward()

    def ce(z):
        return F.cross_entropy(z, y)

    def dir_(z):
        return dirichlet_nll(z, y, r=0.2349, alpha=3.0, generator=g)

    t_ce = median_time(lambda: step(ce), 2000)
    t_dir = median_time(lambda: step(dir_), 2000)
    print(f"loss fwd+bwd [250,10]: cross-entropy {t_ce * 1e6:7.1f} us, Dirichlet mechanism {t_dir * 1e6:7.1f} us, "
          f"ratio {t_dir / t_ce:.2f}x (absolute overhead {(t_dir - t_ce) * 1e6:.0f} us per step)")


if __name__ == "__main__":
    main()
