"""Accuracy against eps (or q), ours beside the paper's: the panel several notebooks draw.

:func:`draw_accuracy` draws one panel on an axes a notebook made; :func:`figure` is the figure of a paper object
(accuracy against eps; Table 9 against q; Figure 2 against the learning rate), which notebooks/accuracy_vs_eps.ipynb
saves for every object.
"""

from __future__ import annotations

import math

import pandas as pd

from dirdp import methods
from dirdp.protocol import fmt_eps
from workflow.experiments import PaperObject
from workflow.report import labels

WIDTH_STYLE = ["o-", "s-", "^-", "D-"]  # ours (always solid): the widest width run, the next, ...; the paper: dashed
DODGE = 1.03  # ours: each line's points drawn at x times DODGE**k (k centred on 0), so that none hides another
METHOD_COLOR = {**{methods.label(m): i for i, m in enumerate(methods.NAMES)},  # style.PALETTE: the methods run here,
                "DPNAS": 4, "Gaussian penultimate layer": 5, "Equivariant DP-SGD": 6}  # then the paper's others
INF_AT = 1.6  # eps = inf is drawn at this multiple of the largest finite eps


def set_style() -> None:
    """The one style of every figure (:func:`workflow.report.style.use`)."""
    from workflow.report import style

    style.use()


def eps_x(eps: pd.Series, finite_max: float) -> pd.Series:
    """eps on the x axis, with inf drawn one step right of the largest finite eps."""
    return eps.map(lambda e: finite_max * INF_AT if math.isinf(e) else e)


def runs_note(profile: str, table: pd.DataFrame) -> str:
    """The subtitle that says which runs a figure of an object's table (:func:`workflow.report.object_table`) shows:
    the profile, and the ``setting`` of its rows run here where they have one; with several (widths, precisions,
    norms) the ``protocol`` where they share it, and that the legend tells the lines apart."""
    here = table[table.origin == "here"]
    note = f"runs: profile '{profile}'"
    settings = list(dict.fromkeys(here.setting.dropna()))
    if len(settings) == 1:
        return f"{note}, {settings[0]}"
    if settings:
        protocols = here.protocol.dropna().unique()
        return f"{note}, " + (f"{protocols[0]}; " if len(protocols) == 1 else "") + "one line per setting (legend)"
    return note


def draw_accuracy(ax, obj: PaperObject, table: pd.DataFrame, title_note: str = "", *, x: str = "eps",
                  legend: str = "right", dodge: float = DODGE, dodge_within_method: bool = False) -> None:
    """One panel of ``obj``'s table (:func:`workflow.report.object_table`) against ``x`` ("eps" or "q"): the paper's
    values (dashed line, no markers, band = one std), ours (solid lines, filled markers, error bars = one std over
    seeds; one line per model width, norm and precision, each marker its own shape, the lines' points dodged
    sideways by a factor ``dodge`` (default :data:`DODGE`; more where many lines share a cell) so that none hides
    another: every line of the panel apart, or with ``dodge_within_method`` each method's lines among themselves, a
    method with one line at its own eps) and the numbers the paper cites (open squares), one
    colour per method in every figure. The legend sits outside the axes (``legend``: "right" or "below"; None:
    none), so it covers no point. With x = "eps" the axis is log-scaled with inf drawn right of the largest finite
    eps; any other x axis (log-scaled, as q) is the caller's to scale and label."""
    from workflow.report import style

    finite = [e for e in table.eps.dropna() if math.isfinite(e)] or [1.0]
    xmax = max(finite + [e for e in table.eps_reported.dropna() if math.isfinite(e)])
    palette = style.PALETTE
    shown = list(dict.fromkeys(table.method))
    slots = [(m, key) for m in shown for key in _lines(table[(table.method == m) & (table.origin == "here")])]
    for i, m in enumerate(shown):
        color = palette[METHOD_COLOR.get(m, 5 + i) % len(palette)]
        paper_rows = table[(table.method == m) & table.paper.notna() & (table.origin != "cited")]
        if len(paper_rows):
            p = paper_rows.sort_values(x)
            for k, part in enumerate(_apart(p, x)):  # the non-private value is not joined to the private ones
                px = eps_x(part.eps, xmax) if x == "eps" else part[x]
                ax.plot(px, part.paper, "--" if len(part) > 1 else "d", color=color, mfc="none",
                        label=f"{m} (paper)" if k == 0 else None)
                ax.fill_between(px, part.paper - part.paper_std.fillna(0), part.paper + part.paper_std.fillna(0),
                                color=color, alpha=0.15)
        ours = table[(table.method == m) & (table.origin == "here")]
        widths = sorted(ours.width.dropna().unique(), reverse=True)
        for j, (w, norm, prec) in enumerate(_lines(ours)):  # one line per width, norm and precision, all solid
            at = ours[(ours.width == w) & (ours.norm == norm) & (ours.precision == prec)].sort_values(x)
            mine = [s for s in slots if s[0] == m] if dodge_within_method else slots
            shift = dodge ** (mine.index((m, (w, norm, prec))) - (len(mine) - 1) / 2)
            ox = (eps_x(at.eps, xmax) if x == "eps" else at[x]) * shift
            gn = ", GroupNorm" if norm == "group" and methods.norm_chosen(m) else ""
            gn += ", bf16" if prec == "bf16" else ""
            what = ("; eps is local DP per record" if methods.is_local(m) else
                    gn if len(widths) == 1 and w == 1.0 else f", {'full' if w == 1.0 else format(w, 'g') + 'x'} width{gn}")
            for k, part in enumerate(_apart(at, x)):  # the non-private value is not joined to the private ones
                px = ox[part.index]
                ax.errorbar(px, part["mean"], yerr=part["std"].fillna(0).astype(float),
                            fmt=WIDTH_STYLE[min(j, 3)] if len(part) > 1 else WIDTH_STYLE[min(j, 3)][0],
                            color=color, capsize=3, alpha=1.0 if j == 0 else 0.8,
                            label=f"{m} (run here{what})" if k == 0 else None)
        cited = table[(table.method == m) & (table.origin == "cited")]
        for c in cited.itertuples():
            e = c.eps_reported if not pd.isna(c.eps_reported) else c.eps
            cx = (xmax * INF_AT if math.isinf(e) else e) if x == "eps" else e
            ax.plot(cx, c.paper, marker="s", mfc="none", color=color, ls="none")
        if len(cited):
            ax.plot([], [], marker="s", mfc="none", color=color, ls="none", label=f"{m} ({cited.source.iloc[0]}, cited)")
    if x == "eps":
        ax.set_xscale("log")
        ticks = sorted(set(finite)) + ([xmax * INF_AT] if table.eps.map(math.isinf).any() else [])
        ax.set_xticks(ticks, [fmt_eps(t) for t in sorted(set(finite))] + (["inf"] if len(ticks) > len(set(finite)) else []))
        ax.minorticks_off()
        ax.set_xlabel("ε (δ = 1e-5)")
    ax.set_ylabel(f"{obj.metric} accuracy (%)")
    ax.set_title(f"{obj.title}: {labels.dataset(obj.dataset)}" + (f"\n{title_note}" if title_note else ""),
                 loc="left")
    if legend == "right":
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    elif legend == "below":
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), borderaxespad=0.0, ncol=2)


def _apart(rows: pd.DataFrame, x: str) -> list[pd.DataFrame]:
    """``rows`` as the parts a line may join: on the eps axis the private values, then the non-private one apart."""
    if x != "eps":
        return [rows]
    inf = rows.eps.map(math.isinf)
    return [part for part in (rows[~inf], rows[inf]) if len(part)]


def _lines(ours: pd.DataFrame) -> list[tuple]:
    """The lines of one method's rows made here: (width, norm, precision), the widest first, BatchNorm before
    GroupNorm, fp32 before bf16."""
    keys = {(w, n, p) for w, n, p in zip(ours.width, ours.norm, ours.precision) if not pd.isna(w)}
    return sorted(keys, key=lambda k: (-k[0], k[1], k[2] != "fp32"))


def figure(obj: PaperObject, table: pd.DataFrame, *, title_note: str = ""):
    """The figure of a paper object: one panel of accuracy against what it varies, ours beside the paper's
    (:func:`draw_accuracy`): eps, or for Table 9 the sampling rate q (log axis, every q of the table labelled); for
    Figure 2 the two panels of :func:`_lr_figure`. Where nothing is run here its title says the paper's values are
    all it shows and why; where there is nothing to draw at all (no run, no printed value): None, no figure."""
    import matplotlib.pyplot as plt

    set_style()
    here = table.origin == "here"
    if not here.any():
        if table.paper.isna().all():
            return None
        why = table.why[table.status == "not_run"].dropna()
        title_note = "the paper's values (no run here" + (f": {why.iloc[0]})" if len(why) else ")")
    if obj.axis == "lr":
        return _lr_figure(obj, table, title_note)
    fig, ax = plt.subplots(figsize=(8, 5))
    draw_accuracy(ax, obj, table, title_note, x=obj.axis, legend="below")
    if obj.axis == "q":
        ax.set_xscale("log")
        ax.set_xticks(obj.q_grid, [f"{q:g}" for q in obj.q_grid])  # every q of the table labelled
        ax.minorticks_off()
        ax.set_xlabel("sampling rate q")
    fig.tight_layout()
    return fig


def _lr_figure(obj: PaperObject, table: pd.DataFrame, title_note: str):
    """Figure 2: accuracy against the learning rate gamma, one line per alpha (left), and against gamma_eff = gamma
    kappa(s_y = 0.9), kappa of Theorem 11 (Eq. 3) at the r* each alpha ran with (right). No paper line: the paper
    prints no numbers for Figure 2."""
    import matplotlib.pyplot as plt

    from dirdp import theory

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    ours = table[table.origin == "here"]
    for alpha, g in ours.groupby("alpha"):
        g = g.sort_values("lr")
        k = theory.kappa(s_y=0.9, r=float(g.rstar.iloc[0]), alpha=float(alpha))
        left.plot(g.lr, g["mean"], "o-", label=f"alpha = {alpha:g}")
        right.plot(g.lr * k, g["mean"], "o-", label=f"alpha = {alpha:g}")
    left.set(xscale="log", xlabel="learning rate gamma", ylabel="test accuracy (%)")
    right.set(xscale="log", xlabel="effective learning rate gamma * kappa(s_y = 0.9)")
    if len(ours):
        left.legend(fontsize=7)
    else:
        left.text(0.5, 0.5, "not run here", transform=left.transAxes, ha="center")
    eps = ", ".join(fmt_eps(e) for e in obj.eps)
    fig.suptitle(f"{obj.title}: {obj.dataset}, eps = {eps} (the paper prints no numbers for this figure)\n{title_note}",
                 fontsize=10)
    fig.tight_layout()
    return fig
