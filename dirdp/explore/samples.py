"""The explorer's views of the mechanism itself and of its consequence: Dirichlet samples on the simplex for d = 3
(:class:`SimplexView`), kappa at initialisation beside the committed runs' accuracy curves
(:func:`training_speed_figure`), and the operating point of the notebook's parameters as text (:func:`reference`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dirdp import accountant, theory
from dirdp.explore.live import View, new_figure
from dirdp.explore.options import rstar
from dirdp.presets import TABLE6_RSTAR, TABLE7_RSTAR, get_preset

RUNS = Path(__file__).resolve().parents[2] / "results" / "runs" / "cpu" / "mnist"
"""The committed CPU-profile MNIST runs (paper protocol) whose accuracy curves :func:`training_speed_figure` shows."""


def simplex_samples(*, s, r: float, alpha: float, n: int = 1500, seed: int = 0) -> np.ndarray:
    """n draws of p~ ~ Dir(r s + alpha) (Mechanism 8, ``dirdp.mechanism``), float64, one row each (rows sum to 1)."""
    import torch

    from dirdp.mechanism import log_dirichlet_rsample

    conc = torch.as_tensor(r * np.asarray(s, dtype=np.float64) + alpha).expand(n, len(s)).contiguous()
    return log_dirichlet_rsample(conc, generator=torch.Generator().manual_seed(seed)).exp().numpy()


CORNERS = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, math.sqrt(3) / 2]])


class SimplexView(View):
    """For d = 3 (true class 1): the Dirichlet samples around s = softmax(z), and the histogram of their loss."""

    size = (12.0, 3.9)

    def _build(self):
        self.axes = self.fig.subplots(1, 2, width_ratios=[1.3, 1.5])
        self.fig.subplots_adjust(left=0.01, right=0.985, bottom=0.13, top=0.84, wspace=0.12)
        a, b = self.axes
        a.plot(*CORNERS[[0, 1, 2, 0]].T, color="0.3", lw=1)
        for (x, y), name, dy in zip(CORNERS, ("class 1 (true y)", "class 2", "class 3"), (-0.07, -0.07, 0.03)):
            a.text(x, y + dy, name, ha="center", fontsize=8)
        self.cloud = a.scatter(np.zeros(1), np.zeros(1), s=2, alpha=0.3, color="C0", label="samples p~")
        self.marks = [a.plot([0], [0], m, color=c, ms=ms, mew=2, label=lab)[0] for m, c, ms, lab in (
            ("*", "C3", 11, "s = softmax(z)"), ("x", "k", 9, "E[p~]"), ("+", "C2", 13, "uniform (1/3, 1/3, 1/3)"))]
        a.set(xlim=(-0.05, 1.55), ylim=(-0.1, 0.93), aspect="equal")
        a.axis("off")
        a.legend(fontsize=7, loc="upper right")
        self.hist = b.stairs([0.0], [0.0, 1.0], fill=True, alpha=0.5, label="samples")
        self.mean = b.axvline(1, color="C0", lw=1.5, label="E[loss] (Eq. 4)")
        self.plain = b.axvline(1, color="C3", ls="--", lw=1, label="-log s_y (eps = inf)")
        b.set(xlabel="loss -log p~_y of one draw", ylabel="density")
        b.legend(fontsize=7, loc="upper right")

    def update(self, *, preset, eps, alpha, z1, z2) -> str:
        r, z = rstar(preset, eps, alpha), np.array([z1, z2, 0.0])
        s = np.exp(z - z.max())
        s /= s.sum()
        p = simplex_samples(s=s, r=r, alpha=alpha)
        mean = (r * s + alpha) / (r + 3 * alpha)
        self.cloud.set_offsets(p @ CORNERS)
        for mark, point in zip(self.marks, (s, mean, np.full(3, 1 / 3))):
            mark.set_data(*(point @ CORNERS)[:, None])
        loss = -np.log(p[:, 0])
        values, edges = np.histogram(loss, bins=40, density=True)
        self.hist.set_data(values, edges)
        e, v = (float(f(s_y=s[0], r=r, alpha=alpha, d=3)) for f in (theory.expected_loss, theory.loss_variance))
        self.mean.set_xdata([e, e])
        self.plain.set_xdata([-math.log(s[0])] * 2)
        self.axes[1].relim()
        self.axes[1].autoscale_view()
        self.axes[1].set_title(f"{len(loss)} draws: mean {loss.mean():.3f} (Eq. 4: {e:.3f}), variance "
                               f"{loss.var(ddof=1):.3f} (Eq. 5: {v:.3f})", fontsize=9)
        self.title.set_text(f"{self._setting(preset, eps, alpha)}, d = 3  ->  r* = {r:.4g}: "
                            f"p~ ~ Dir(r* s + alpha), concentration ({', '.join(f'{c:.3f}' for c in r * s + alpha)})")
        fmt = ", ".join
        return (f"s = softmax(z) = ({fmt(f'{x:.3f}' for x in s)}); r* = {r:.4g}, alpha = {alpha:g}: E[p~] = "
                f"(r* s + alpha) / (r* + 3 alpha) = ({fmt(f'{x:.3f}' for x in mean)})\nloss of one draw: E = {e:.4f}, "
                f"Var = {v:.4f} (Eqs. 4-5); without the mechanism (eps = inf) it is -log s_y = {-math.log(s[0]):.4f}")


def committed_runs(runs_dir=None) -> dict:
    """{eps: run} of the protocol-default Algorithm 1 MNIST runs (seed 0) found in ``runs_dir`` (None: :data:`RUNS`),
    each read by :func:`dirdp.run_result.read_run`."""
    from dirdp.run_result import read_run

    folder = Path(runs_dir) if runs_dir else RUNS
    found = [read_run(path) for tag in ("eps1", "eps2", "epsinf") if (path := folder / f"alg1_{tag}_seed0.json").exists()]
    return {run["eps"]: run for run in found}


def training_speed_figure(runs: dict, *, s_late: float = 0.9):
    """(Figure, text): kappa at initialisation (s_y = 1/d) and at s_y = ``s_late`` for each finite-eps run (its own r*
    and alpha; kappa = 1 at eps = inf, no mechanism), beside the runs' test-accuracy curves."""
    fig = new_figure((12.0, 3.4))
    a, b = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.06, right=0.985, bottom=0.15, top=0.84, wspace=0.2)
    lines = []
    for i, (eps, run) in enumerate(sorted(runs.items())):
        d = get_preset(run["dataset"]).num_classes
        ks = [1.0, 1.0] if math.isinf(eps) else [float(theory.kappa(s_y=s, r=run["rstar"], alpha=run["alpha"]))
                                                 for s in (1 / d, s_late)]
        bars = a.bar([i - 0.2, i + 0.2], ks, width=0.38, color=["C0", "C1"])
        a.bar_label(bars, labels=["1 (no mechanism)", ""] if math.isinf(eps) else [f"{k:.3g}" for k in ks], fontsize=8)
        steps, acc = zip(*run["curve"]) if run["curve"] else ((), ())
        b.plot(steps, acc, marker=".", label=f"eps = {eps:g}")
        lines.append(f"eps = {eps:g}: kappa {ks[0]:.4f} at s_y = 1/{d} (gamma_eff {run['lr'] * ks[0]:.5f}), "
                     f"{ks[1]:.4f} at s_y = {s_late:g}" + (f"; test accuracy {acc[0]:.1f}% after {steps[0]} steps, "
                                                           f"{acc[-1]:.1f}% after {steps[-1]}" if steps else ""))
    a.set_xticks(range(len(runs)), [f"eps = {e:g}" for e in sorted(runs)])
    a.set(yscale="log", ylabel="kappa (Eq. 3)", title="kappa at s_y = 1/d (blue, initialisation) and s_y = "
                                                      f"{s_late:g} (orange)")
    b.set(xlabel="training step", ylabel="test accuracy (%)", title="the committed runs: test accuracy during training")
    for ax in (a, b):
        ax.title.set_fontsize(9)
    if runs:
        b.legend(fontsize=8, loc="lower right")
    names = sorted({f"{run['dataset']}, {run['protocol']}, seed {run['seed']}" for run in runs.values()})
    fig.suptitle(f"training speed ({'; '.join(names) or 'no committed runs found'}): a small kappa at initialisation "
                 "scales the first steps down", fontsize=10)
    return fig, "\n".join(lines) or "no committed runs found"


def reference(*, preset, eps, alpha=None, s_y=0.9, d=None, lr=None) -> str:
    """The operating point of the parameters as text, with the r* the paper prints for it (Tables 6-7) if it prints one."""
    p = get_preset(preset)
    alpha, d, lr = (p.alpha if alpha is None else alpha), (p.num_classes if d is None else d), (p.lr if lr is None else lr)
    try:
        op = theory.operating_point(eps=eps, alpha=alpha, q=p.q, steps=p.steps, delta=p.delta, s_y=s_y, d=d, lr=lr)
    except accountant.InfeasibleEpsilonError as err:
        return str(err)
    printed = ("Table 7", TABLE7_RSTAR.get(p.name, {}).get(eps)) if alpha == 3.0 else (None, None)
    if printed[1] is None and p.name == "cifar10" and eps == 1.0:
        printed = ("Table 6", TABLE6_RSTAR.get(alpha))
    return (f"{p.name} (q = {p.q:.5f}, T = {p.steps}, delta = {p.delta:g}), alpha = {alpha:g}, eps = {eps:g}, d = {d}, "
            f"lr = {lr:g}\nr* = {op['rstar']:.5f}" + ("" if printed[1] is None else f" (paper, {printed[0]}: {printed[1]})") +
            f"; certified eps {op['certified_eps']:.4f} at order {op['order']}\nat s_y = {s_y:g}: kappa = "
            f"{op['kappa']:.4f}, E[loss] = {op['expected_loss']:.4f}, Var[loss] = {op['loss_variance']:.4f}, "
            f"gamma_eff = {op['effective_lr']:.5f}")
