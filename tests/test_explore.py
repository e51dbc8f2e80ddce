"""dirdp.explore, the views of notebooks/explore_kappa.ipynb (issue 18): the controls offer exact values and only
certifiable eps, a preset brings its own d and lr, each view redraws the same Figure in place, and the views show what
the repo found (kappa ~ alpha^-1/2 at a fixed eps, no saturation; Dirichlet samples on the simplex)."""

import base64
import math

import numpy as np
import pytest

from dirdp import accountant, explore, theory
from dirdp.presets import PRESETS, get_preset

SY = dict(preset="cifar10", eps=1.0, alpha=3.0, s_y=0.9, d=10, lr=0.1)


def slider_values(widget):
    return [value for _, value in widget.options]


def test_alpha_3_and_table6_alphas_are_reachable_exactly():
    c = explore.controls("alpha", "s_y", "lr")
    assert c["alpha"].value == 3.0 and type(c["alpha"].value) is float
    assert {0.1, 0.3, 0.5, 1.0, 2.0, 3.0} <= set(slider_values(c["alpha"]))
    assert c["s_y"].value == 0.9 and 0.9 in slider_values(c["s_y"])
    assert {0.05, 0.1} <= set(slider_values(c["lr"]))
    assert explore.controls("alpha", alpha=0.37)["alpha"].value == 0.37  # an off-grid start is added, not snapped
    assert not any(w.continuous_update for w in explore.controls("eps", "alpha", "s_y", "d", "lr").values())


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_offered_eps_is_certifiable_and_above_the_floor(preset):
    p, floor = get_preset(preset), explore.floor(preset).epsilon
    offered = explore.eps_options(preset)
    assert offered and all(e > floor for e in offered)
    assert [e for e in explore.EPS_GRID if e <= floor], "the grid should reach below every preset's floor"
    for e in offered:
        r, spend = accountant.calibrate(eps=e, alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta)
        assert 0 < r < p.alpha and spend.epsilon <= e


def test_an_uncertifiable_start_moves_to_the_smallest_certifiable_eps():
    floor = explore.floor("cifar10").epsilon
    assert 0.5 < floor < 0.7
    eps = explore.controls("eps", eps=0.5)["eps"]
    assert eps.value == min(explore.eps_options("cifar10")) > floor
    assert 0.5 not in slider_values(eps)
    assert "cannot be certified" in explore.reference(preset="cifar10", eps=0.5)


def test_the_controls_start_at_the_presets_d_and_lr():
    c = explore.controls("d", "lr", "alpha", preset="dermamnist")
    assert (c["d"].value, c["lr"].value, c["alpha"].value) == (7, 0.05, 3.0)
    c = explore.controls("d", "lr", preset="dermamnist", d=12, lr=0.2)
    assert (c["d"].value, c["lr"].value) == (12, 0.2)


def test_changing_the_preset_brings_its_d_lr_and_certifiable_eps_and_redraws_once():
    live = explore.Live(explore.SyView(), **explore.controls("preset", "eps", "alpha", "s_y", "d", "lr", eps=0.7))
    c, fig, png, updates = live.controls, live.view.fig, live.image.value, live.updates
    assert c["eps"].value == 0.7  # certifiable for CIFAR-10 (floor 0.675) ...
    c["preset"].value = "dermamnist"
    assert live.updates == updates + 1
    assert (c["d"].value, c["lr"].value) == (7, 0.05)
    assert c["eps"].value == 1.0 and min(slider_values(c["eps"])) > explore.floor("dermamnist").epsilon  # ... not here
    assert "dermamnist" in live.text and "d = 7, lr = 0.05" in live.text and "eps > 0.9155" in live.text
    assert live.view.fig is fig and live.image.value != png
    c["alpha"].value = 5.0
    assert live.updates == updates + 2 and "alpha = 5," in live.text


def test_the_readout_is_dirdp_theorys_operating_point_and_names_the_floor():
    text = explore.SyView().update(**SY)
    p = get_preset("cifar10")
    op = theory.operating_point(eps=1.0, alpha=3.0, q=p.q, steps=p.steps, delta=p.delta, s_y=0.9, d=10, lr=0.1)
    assert f"r* = {op['rstar']:.5f}" in text and f"kappa = {op['kappa']:.4f}" in text
    assert f"Var[loss] = {op['loss_variance']:.4f}" in text and f"gamma_eff = {op['effective_lr']:.5f}" in text
    assert "floor of this protocol: eps > 0.6754" in text
    assert "r* = 0.23489 (paper, Table 7: 0.235)" in explore.reference(preset="cifar10", eps=1.0)


@pytest.mark.parametrize("view, setting", [
    (explore.SyView, SY), (explore.HView, dict(preset="cifar10", eps=1.0, alpha=3.0)),
    (explore.AlphaView, dict(preset="mnist", eps=2.0, s_y=0.9, d=10)),
    (explore.SimplexView, dict(preset="cifar10", eps=1.0, alpha=3.0, z1=1.5, z2=0.5)),
])
def test_each_view_redraws_the_same_figure_in_place_at_a_fixed_size(view, setting):
    v = view()
    fig, axes, artists = v.fig, list(v.fig.axes), [list(ax.get_children()) for ax in v.fig.axes]
    v.update(**setting)
    first = v.png()
    v.update(**dict(setting, eps=4.0))
    second = v.png()
    assert v.fig is fig and list(v.fig.axes) == axes and fig.get_layout_engine() is None
    assert [len(ax.get_children()) for ax in fig.axes] == [len(a) for a in artists]  # nothing added per redraw
    assert first != second and first[:8] == b"\x89PNG\r\n\x1a\n"
    assert first[16:24] == second[16:24]  # the PNG header's width and height: the page never jumps


def test_live_displays_as_the_widget_with_a_static_png_and_text():
    live = explore.Live(explore.HView(), **explore.controls("preset", "eps", "alpha"))
    bundle = live._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == live.widget.model_id
    assert base64.b64decode(bundle["image/png"]) == live.image.value
    assert bundle["text/plain"] == live.text and "floor" in live.text and "(children=" not in bundle["text/plain"]


def test_kappa_falls_like_alpha_to_the_minus_half_at_a_fixed_eps_and_does_not_saturate():
    sw = explore.alpha_sweep(preset="cifar10", eps=1.0, s_y=0.9, d=10)
    assert sw["slope"] == pytest.approx(-0.5, abs=0.05)
    assert np.all(np.diff(sw["kappa"]) < 0)
    # Appendix C.1's r = c alpha saturates at c s_y / (1 + c s_y); the real kappa ends an order of magnitude below it
    assert sw["kappa_c1"][-1] == pytest.approx(sw["saturation"], rel=0.02)
    assert sw["kappa"][-1] < sw["saturation"] / 10
    assert sw["rstar"][0] / sw["alpha"][0] == pytest.approx(sw["rstar"][1] / sw["alpha"][1], rel=0.02)  # r* ~ c alpha
    top = sw["alpha"] >= 100
    assert np.polyfit(np.log(sw["alpha"][top]), np.log(sw["rstar"][top]), 1)[0] == pytest.approx(0.5, abs=0.05)


def test_h_curve_rises_from_the_floor_and_crosses_eps_at_rstar():
    c, floor = explore.h_curve("mnist", 3.0), explore.floor("mnist")
    assert np.all(np.diff(c["h"]) >= -1e-12)
    assert c["h"][0] == pytest.approx(floor.epsilon, rel=0.01) and c["h"][0] > floor.epsilon
    r = explore.rstar("mnist", 1.0, 3.0)
    below, above = c["r"] < r, c["r"] > r
    assert np.all(c["h"][below] <= 1.0) and np.all(c["h"][above] > 1.0)
    assert "Brent" in explore.HView().update(preset="mnist", eps=1.0, alpha=3.0)


def test_simplex_samples_lie_on_the_simplex_around_their_mean():
    s, r, alpha = np.array([0.6, 0.3, 0.1]), 20.0, 3.0
    p = explore.simplex_samples(s=s, r=r, alpha=alpha, n=4000, seed=1)
    assert p.shape == (4000, 3) and np.all(p > 0)
    assert np.allclose(p.sum(1), 1.0, atol=1e-12)
    mean = (r * s + alpha) / (r + 3 * alpha)
    assert np.allclose(p.mean(0), mean, atol=4 * p.std(0).max() / math.sqrt(4000))
    assert np.array_equal(p, explore.simplex_samples(s=s, r=r, alpha=alpha, n=4000, seed=1))  # one seed, one cloud


def test_training_speed_uses_the_committed_runs_kappa():
    runs = explore.committed_runs()
    if not {1.0, math.inf} <= set(runs):
        pytest.skip(f"the committed MNIST runs are not under {explore.RUNS}")
    fig, text = explore.training_speed_figure(runs)
    run = runs[1.0]
    k0, k9 = (float(theory.kappa(s_y=s, r=run["rstar"], alpha=run["alpha"])) for s in (0.1, 0.9))
    assert k0 < k9 < 1 and f"kappa {k0:.4f} at s_y = 1/10" in text and f"{k9:.4f} at s_y = 0.9" in text
    assert run["curve"] and runs[math.inf]["curve"][0][1] > run["curve"][0][1]  # the slow start, in the data
    assert len(fig.axes) == 2 and explore.figure_png(fig)[:4] == b"\x89PNG"


def test_training_speed_without_runs_says_so(tmp_path):
    assert explore.committed_runs(tmp_path) == {}
    assert explore.training_speed_figure({})[1] == "no committed runs found"
