"""The kappa explorer (``notebooks/explore_kappa.ipynb``): the views that show why Algorithm 1 trains the way it does.

Each view draws one matplotlib Figure once and redraws its artists in place on ``update(**setting)``, which recomputes
r* (Eq. 1) for the setting and returns a plain-text readout; :class:`Live` wires ipywidgets controls (made by
:func:`controls`: exact values only, only certifiable eps) to a view and displays it as one widget whose PNG also
stands in where no widget can render (the executed copy, an untrusted notebook, GitHub). The maths is
:mod:`dirdp.theory` and :mod:`dirdp.accountant`; nothing here computes a bound of its own.

- :class:`SyView`: kappa (Eq. 3), E[loss] (Eq. 4), Var[loss] (Eq. 5) and gamma_eff (Eq. 6) against s_y
- :class:`HView`: h(r) of Theorem 10 with the target eps, the floor and r* (the root Brent's method finds)
- :class:`AlphaView`: kappa, r* and Var against alpha at a fixed eps (r* per alpha), beside Appendix C.1's r = c alpha
- :class:`SimplexView`: for d = 3, Dirichlet samples p~ ~ Dir(r* softmax(z) + alpha) on the simplex, and their loss
- :func:`training_speed_figure`: kappa at initialisation (s_y = 1/d) and at s_y = 0.9 beside committed accuracy curves

Importing it loads torch (through :mod:`dirdp.theory`); ``import dirdp`` does not import it.
"""

from dirdp.explore.live import Live, View, figure_png
from dirdp.explore.options import (ALPHA_SWEEP, ALPHAS, EPS_GRID, LOGITS, LRS, S_YS, controls, eps_options, floor,
                                   rstar)
from dirdp.explore.samples import (RUNS, SimplexView, committed_runs, reference, simplex_samples,
                                   training_speed_figure)
from dirdp.explore.views import AlphaView, HView, SyView, alpha_sweep, h_curve

__all__ = ["ALPHAS", "ALPHA_SWEEP", "AlphaView", "EPS_GRID", "HView", "LOGITS", "LRS", "Live", "RUNS", "S_YS",
           "SimplexView", "SyView", "View", "alpha_sweep", "committed_runs", "controls", "eps_options", "figure_png",
           "floor", "h_curve", "reference", "rstar", "simplex_samples", "training_speed_figure"]
