"""The explorer's views of Theorem 11 and Eq. (1): against s_y (:class:`SyView`), against r (:class:`HView`, what
Brent's method solves) and against alpha at a fixed eps (:class:`AlphaView`, where Appendix C.1's saturation fails)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dirdp import accountant, theory
from dirdp.explore.live import View
from dirdp.explore.options import ALPHA_SWEEP, floor, rstar
from dirdp.presets import get_preset


class SyView(View):
    """kappa, E[loss], Var[loss] and gamma_eff against the true-class probability s_y at one setting."""

    def _build(self):
        self.axes = self.fig.subplots(1, 4)
        self.fig.subplots_adjust(left=0.045, right=0.99, bottom=0.15, top=0.76, wspace=0.3)
        self.s = np.linspace(0.005, 0.995, 199)
        self.curves = [ax.plot(self.s, self.s, color="C0")[0] for ax in self.axes]
        self.dots = [ax.plot([0.5], [0.5], "o", color="C3", label="chosen s_y")[0] for ax in self.axes]
        self.init = [ax.axvline(0.1, color="0.5", ls=":", lw=1, label="s_y = 1/d (initialisation)") for ax in self.axes]
        self.plain = self.axes[1].plot(self.s, -np.log(self.s), "--", color="0.5", lw=1, label="-log s_y (eps = inf)")[0]
        self.gamma = self.axes[3].axhline(0.1, ls="--", color="0.5", lw=1, label="lr (eps = inf: kappa = 1)")
        self.axes[3].set_yscale("log")
        for ax in self.axes:
            ax.set_xlabel("s_y = softmax(z)_y")
            ax.set_xlim(0, 1)
        self.axes[0].legend(fontsize=7, loc="upper left")
        self.axes[1].legend(fontsize=7, loc="upper right")
        self.axes[3].legend(fontsize=7, loc="lower right")

    def update(self, *, preset, eps, alpha, s_y, d, lr) -> str:
        p, r = get_preset(preset), rstar(preset, eps, alpha)
        op = theory.operating_point(eps=eps, alpha=alpha, q=p.q, steps=p.steps, delta=p.delta, s_y=s_y, d=d, lr=lr)
        k0 = float(theory.kappa(s_y=1 / d, r=r, alpha=alpha))
        ys = (theory.kappa(s_y=self.s, r=r, alpha=alpha), theory.expected_loss(s_y=self.s, r=r, alpha=alpha, d=d),
              theory.loss_variance(s_y=self.s, r=r, alpha=alpha, d=d), theory.effective_lr(lr=lr, s_y=self.s, r=r,
                                                                                            alpha=alpha))
        at = (op["kappa"], op["expected_loss"], op["loss_variance"], op["effective_lr"])
        names = ("kappa (Eq. 3): factor on E[gradient]", "E[loss] (Eq. 4)", "Var[loss] (Eq. 5)",
                 f"gamma_eff = {lr:g} x kappa (Eq. 6)")
        for ax, line, dot, vline, y, v, name in zip(self.axes, self.curves, self.dots, self.init, ys, at, names):
            line.set_ydata(y)
            dot.set_data([s_y], [v])
            vline.set_xdata([1 / d, 1 / d])
            ax.set_title(f"{name}\n= {v:.4g} at s_y = {s_y:g}", fontsize=9)
        self.gamma.set_ydata([lr, lr])
        self._rescale()
        self.title.set_text(f"{self._setting(preset, eps, alpha)}, d = {d}, lr = {lr:g}  ->  r* = {r:.5f} (Eq. 1)")
        return (f"{p.name}: q = {p.q:.5f}, T = {p.steps}, delta = {p.delta:g}, d = {d}, lr = {lr:g}; alpha = {alpha:g},"
                f" eps = {eps:g}\nr* = {r:.5f} (certified eps {op['certified_eps']:.4f} at RDP order {op['order']});"
                f" floor of this protocol: eps > {floor(p.name).epsilon:.4f} (no r > 0 certifies less)\n"
                f"at s_y = {s_y:g}: kappa = {op['kappa']:.4f}  E[loss] = {op['expected_loss']:.4f}  "
                f"Var[loss] = {op['loss_variance']:.4f}  gamma_eff = {op['effective_lr']:.5f}\n"
                f"at initialisation (s_y = 1/d = {1 / d:.3f}): kappa = {k0:.4f}, gamma_eff = {lr * k0:.5f}"
                f" (kappa at s_y = {s_y:g} / kappa at 1/d = {op['kappa'] / k0:.2f})")


@lru_cache(maxsize=256)
def h_curve(preset: str, alpha: float, n: int = 160) -> dict:
    """h(r) (Theorem 10) and the RDP order that attains it on r = alpha x geomspace(1e-5, 0.999, n)."""
    p = get_preset(preset)
    r = alpha * np.geomspace(1e-5, 0.999, n)
    spends = [accountant.epsilon(r=float(x), alpha=alpha, q=p.q, steps=p.steps, delta=p.delta) for x in r]
    return dict(r=r, h=np.array([s.epsilon for s in spends]), order=np.array([s.order for s in spends]))


class HView(View):
    """h(r), the target eps, the floor lim_{r->0} h(r) and r* = sup{r : h(r) <= eps}; and the order attaining h."""

    size = (12.0, 3.1)

    def _build(self):
        self.axes = self.fig.subplots(1, 2)
        self.fig.subplots_adjust(left=0.06, right=0.985, bottom=0.16, top=0.8, wspace=0.18)
        a, b = self.axes
        self.h = a.plot([1, 2], [1, 2], color="C0", label="h(r) (Theorem 10)")[0]
        self.target = a.axhline(1, color="C3", lw=1, label="target eps")
        self.floor = a.axhline(0.5, color="0.4", ls="--", lw=1, label="floor lim h(r), r -> 0")
        self.vline = a.axvline(1, color="C3", ls=":", lw=1)
        self.dot = a.plot([1], [1], "o", color="C3", label="r* (Eq. 1, Brent)")[0]
        self.order = b.step([1, 2], [2, 2], where="mid", color="C0", label="order lambda attaining h(r)")[0]
        self.bound = b.plot([1, 2], [2, 2], "--", color="0.5", lw=1, label="1 + alpha / r (admissible below)")[0]
        b.axhline(accountant.DEFAULT_MAX_ORDER, color="0.5", ls=":", lw=1, label="largest order searched")
        for ax, ylabel in ((a, "eps"), (b, "RDP order lambda")):
            ax.set(xscale="log", yscale="log", xlabel="r (Dirichlet scale)", ylabel=ylabel)
            ax.legend(fontsize=7, loc="upper left")

    def update(self, *, preset, eps, alpha) -> str:
        c, fl, r, p = h_curve(preset, float(alpha)), floor(preset), rstar(preset, eps, alpha), get_preset(preset)
        spend = accountant.epsilon(r=r, alpha=alpha, q=p.q, steps=p.steps, delta=p.delta)
        self.h.set_data(c["r"], c["h"])
        self.target.set_ydata([eps, eps])
        self.floor.set_ydata([fl.epsilon, fl.epsilon])
        self.vline.set_xdata([r, r])
        self.dot.set_data([r], [spend.epsilon])
        self.order.set_data(c["r"], c["order"])
        self.bound.set_data(c["r"], np.minimum(1 + alpha / c["r"], 1e4))
        self._rescale()
        self.axes[0].set_ylim(0.7 * fl.epsilon, max(100.0, 10 * eps))
        self.axes[0].set_title(f"h(r) = eps: r* = {r:.5g}, h(r*) = {spend.epsilon:.4f}", fontsize=9)
        self.axes[1].set_title(f"at r*: order {spend.order}; the floor sits at order {fl.order}", fontsize=9)
        self.title.set_text(self._setting(preset, eps, alpha))
        return (f"Brent's method solves h(r) = eps = {eps:g} on (0, alpha = {alpha:g}): r* = {r:.6g}, "
                f"h(r*) = {spend.epsilon:.5f} at RDP order {spend.order}.\nfloor = lim_(r->0) h(r) = {fl.epsilon:.4f} "
                f"(order {fl.order}): at or below it no r > 0 is certified, so eps <= {fl.epsilon:.4f} is not offered.")


def alpha_sweep(*, preset: str, eps: float, s_y: float, d: int, alphas=ALPHA_SWEEP) -> dict:
    """kappa and Var against alpha at a fixed eps, r* recomputed per alpha, beside Appendix C.1's assumption r = c alpha
    (c = r*/alpha at the smallest alpha, where r* ~ c alpha holds); ``slope``: d log kappa / d log alpha fitted over the
    top decade of alphas (about -1/2: kappa ~ alpha^-1/2, no saturation); ``saturation``: C.1's limit c s_y/(1+c s_y)."""
    alphas = np.asarray(alphas, dtype=np.float64)
    r = np.array([rstar(preset, eps, float(a)) for a in alphas])
    c = r[0] / alphas[0]
    top = alphas >= alphas[-1] / 10
    k = theory.kappa(s_y=s_y, r=r, alpha=alphas)
    return dict(alpha=alphas, rstar=r, kappa=k, var=theory.loss_variance(s_y=s_y, r=r, alpha=alphas, d=d), c=c,
                kappa_c1=theory.kappa(s_y=s_y, r=c * alphas, alpha=alphas),
                var_c1=theory.loss_variance(s_y=s_y, r=c * alphas, alpha=alphas, d=d),
                slope=float(np.polyfit(np.log(alphas[top]), np.log(k[top]), 1)[0]), saturation=c * s_y / (1 + c * s_y))


class AlphaView(View):
    """kappa, r* and Var[loss] against alpha at a fixed eps: r* per alpha (solid) against r = c alpha (dashed)."""

    def _build(self):
        self.axes = self.fig.subplots(1, 3)
        self.fig.subplots_adjust(left=0.05, right=0.99, bottom=0.15, top=0.8, wspace=0.25)
        titles = ("kappa (Eq. 3) at the chosen s_y", "r* (Eq. 1)", "Var[loss] (Eq. 5) at the chosen s_y")
        self.real = [ax.plot([1, 2], [1, 2], color="C0", label="r = r*(alpha)")[0] for ax in self.axes]
        self.c1 = [ax.plot([1, 2], [1, 2], "--", color="C1", label="r = c alpha (App. C.1)")[0] for ax in self.axes]
        self.guide = [ax.plot([1, 2], [1, 2], ":", color="0.4", lw=1, label=f"alpha^{p}")[0]
                      for ax, p in zip(self.axes, ("-1/2", "1/2"))]
        self.sat = self.axes[0].axhline(1, color="C1", ls=":", lw=1, label="C.1's limit c s_y / (1 + c s_y)")
        self.dots = [ax.plot([3], [1], "o", color="C3")[0] for ax in self.axes]
        for ax, title in zip(self.axes, titles):
            ax.set(xscale="log", yscale="log", xlabel="alpha (Dirichlet offset)", title=title)
            ax.title.set_fontsize(9)
        self.axes[0].legend(fontsize=7, loc="lower left")
        self.axes[1].legend(fontsize=7, loc="upper left")

    def update(self, *, preset, eps, s_y, d) -> str:
        sw, a0 = alpha_sweep(preset=preset, eps=eps, s_y=s_y, d=d), get_preset(preset).alpha
        a = sw["alpha"]
        for line, c1, y, y1 in zip(self.real, self.c1, (sw["kappa"], sw["rstar"], sw["var"]),
                                   (sw["kappa_c1"], sw["c"] * a, sw["var_c1"])):
            line.set_data(a, y)
            c1.set_data(a, y1)
        self.guide[0].set_data(a, sw["kappa"][-1] * (a / a[-1]) ** -0.5)
        self.guide[1].set_data(a, sw["rstar"][-1] * (a / a[-1]) ** 0.5)
        self.sat.set_ydata([sw["saturation"]] * 2)
        r0 = rstar(preset, eps, a0)
        for dot, v in zip(self.dots, (theory.kappa(s_y=s_y, r=r0, alpha=a0), r0,
                                      theory.loss_variance(s_y=s_y, r=r0, alpha=a0, d=d))):
            dot.set_data([a0], [float(v)])
        self._rescale()
        self.title.set_text(f"{self._setting(preset, eps)}, s_y = {s_y:g}, d = {d}: at a fixed eps, r* ~ c alpha only "
                            f"for small alpha; dot: alpha = {a0:g}")
        return (f"fixed eps = {eps:g} ({get_preset(preset).name} protocol), s_y = {s_y:g}, d = {d}; r* recomputed for "
                f"each of {len(a)} alphas in [{a[0]:g}, {a[-1]:g}].\nslope of log kappa against log alpha over the top "
                f"decade: {sw['slope']:.3f}" + (" (kappa ~ alpha^-1/2: it keeps falling)" if abs(sw["slope"] + 0.5)
                                                    < 0.1 else "") + f". Appendix C.1 (r = c alpha, "
                f"c = {sw['c']:.4f}) says it saturates at {sw['saturation']:.4f}; at alpha = {a[-1]:g} it is "
                f"{sw['kappa'][-1]:.4f}.")
