"""What the explorer's controls offer: exact values (alpha = 3 is one), only certifiable eps, the preset's d and lr.

Also the cached r* (Eq. 1) and floor every view reads, so that moving a control back and forth costs no recomputation.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from dirdp import accountant
from dirdp.presets import PRESETS, get_preset

ALPHAS = (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 50.0, 100.0, 200.0, 300.0,
          500.0, 1000.0)
"""alpha slider: a 1-2-3-5 grid holding Table 6's alphas (0.1, 0.3, 0.5, 1, 2, 3) exactly."""
EPS_GRID = (0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 16.0)
"""eps slider before the floor is applied: Table 7's eps values among them."""
LRS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
S_YS = tuple(k / 100 for k in range(1, 100))
LOGITS = tuple(k / 10 for k in range(-40, 41))
ALPHA_SWEEP = np.geomspace(0.01, 1000.0, 41)
"""The alphas of :class:`dirdp.explore.AlphaView` (and :func:`dirdp.explore.alpha_sweep`): five decades."""


@lru_cache(maxsize=None)
def floor(preset: str) -> accountant.PrivacySpend:
    """lim_{r->0} h(r) for the preset's protocol: no r > 0 certifies an eps at or below it (independent of alpha)."""
    p = get_preset(preset)
    return accountant.epsilon_floor(alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta)


def eps_options(preset: str, extra=()) -> list[float]:
    """The eps values offered for a preset: :data:`EPS_GRID` and ``extra``, only those above the floor."""
    return sorted({float(e) for e in (*EPS_GRID, *extra) if math.isfinite(e) and e > floor(preset).epsilon})


@lru_cache(maxsize=8192)
def rstar(preset: str, eps: float, alpha: float) -> float:
    """r* of Eq. (1) at the preset's (q, T, delta), cached: a view recomputes it for every setting it draws."""
    p = get_preset(preset)
    return accountant.rstar(eps=eps, alpha=alpha, q=p.q, steps=p.steps, delta=p.delta)


def controls(*names: str, preset="cifar10", eps=1.0, alpha=None, s_y=0.9, d=None, lr=None, z=(1.5, 0.5)) -> dict:
    """ipywidgets controls by name (preset, eps, alpha, s_y, d, lr, z1, z2), each starting at the given value (None:
    the preset's alpha, number of classes, learning rate). Sliders step through exact values (alpha = 3 is one), eps
    only through certifiable ones (an uncertifiable start moves to the smallest that is), and update on release: every
    change redraws a figure, which takes longer than a drag's steps."""
    import ipywidgets as w

    p = get_preset(preset)
    alpha, d, lr = (p.alpha if alpha is None else alpha), (p.num_classes if d is None else d), (p.lr if lr is None else lr)
    offered = eps_options(p.name, extra=(eps,))
    style, layout = {"description_width": "initial"}, w.Layout(width="300px")

    def slider(desc, options, value):
        return w.SelectionSlider(options=[(f"{o:g}", o) for o in options], value=value, description=desc,
                                 continuous_update=False, style=style, layout=layout)

    make = {
        "preset": lambda: w.Dropdown(options=list(PRESETS), value=p.name, description="preset", style=style,
                                     layout=w.Layout(width="220px")),
        "eps": lambda: slider("eps", offered, eps if eps in offered else min(offered, key=lambda e: (e < eps, e))),
        "alpha": lambda: slider("alpha", sorted({*ALPHAS, float(alpha)}), float(alpha)),
        "s_y": lambda: slider("s_y", sorted({*S_YS, float(s_y)}), float(s_y)),
        "d": lambda: w.IntSlider(value=d, min=2, max=100, description="d (classes)", continuous_update=False,
                                 style=style, layout=layout),
        "lr": lambda: slider("lr", sorted({*LRS, float(lr)}), float(lr)),
        "z1": lambda: slider("z_1 (true class)", LOGITS, z[0]),
        "z2": lambda: slider("z_2", LOGITS, z[1]),
    }
    return {name: make[name]() for name in names}
