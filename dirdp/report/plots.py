"""Accuracy against eps (or q), ours beside the paper's: the panel several notebooks draw.

:func:`draw_accuracy` draws one panel on an axes the notebook made; the notebooks own their figures (size,
panels, axes of their own such as Table 9's q or Figure 2's learning rate) and save them.
"""

from __future__ import annotations

import math

import pandas as pd

from dirdp.experiments import METHODS, PaperObject
from dirdp.protocol import fmt_eps

WIDTH_STYLE = ["o-", "s--", "^:"]  # ours at the widest width run, the next, the next
METHOD_COLOR = {"Algorithm 1": 0, "DP-SGD": 1, "Tempered sigmoid DP-SGD": 2, "LATENT": 3, "DPNAS": 4,
                "Gaussian penultimate layer": 5, "Equivariant DP-SGD": 6}  # tab10 indices
INF_AT = 1.6  # eps = inf is drawn at this multiple of the largest finite eps


def set_style() -> None:
    """The seaborn theme of every figure of the paper's objects."""
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")


def eps_x(eps: pd.Series, finite_max: float) -> pd.Series:
    """eps on the x axis, with inf drawn one step right of the largest finite eps."""
    return eps.map(lambda e: finite_max * INF_AT if math.isinf(e) else e)


def draw_accuracy(ax, obj: PaperObject, table: pd.DataFrame, title_note: str = "", *, x: str = "eps") -> None:
    """One panel of ``obj``'s table (:func:`dirdp.report.object_table`) against ``x`` ("eps" or "q"): the paper's
    values (dashed, band = one std), ours (markers, error bars = one std over seeds; one line per model width, the
    widest solid) and the numbers the paper cites (open squares), one colour per method in every figure. With
    x = "eps" the axis is log-scaled with inf drawn right of the largest finite eps; any other x axis is the
    caller's to scale and label."""
    import seaborn as sns

    finite = [e for e in table.eps.dropna() if math.isfinite(e)] or [1.0]
    xmax = max(finite + [e for e in table.eps_reported.dropna() if math.isfinite(e)])
    palette = sns.color_palette("tab10")
    methods = list(dict.fromkeys(table.method))
    for i, m in enumerate(methods):
        color = palette[METHOD_COLOR.get(m, 5 + i) % 10]
        paper_rows = table[(table.method == m) & table.paper.notna() & (table.label != "paper, cited")]
        if len(paper_rows):
            p = paper_rows.sort_values(x)
            px = eps_x(p.eps, xmax) if x == "eps" else p[x]
            ax.plot(px, p.paper, "--", color=color, label=f"{m} (paper)")
            ax.fill_between(px, p.paper - p.paper_std.fillna(0), p.paper + p.paper_std.fillna(0), color=color, alpha=0.15)
        ours = table[(table.method == m) & (table.label == "run here")]
        if "norm" in ours:  # Algorithm 1 with GroupNorm (an option here) is its own line
            ours = ours.assign(norm=ours.norm.fillna("batch"))
        else:
            ours = ours.assign(norm="batch")
        widths = sorted(ours.width.dropna().unique(), reverse=True)
        lines = sorted({(w, n) for w, n in zip(ours.width, ours.norm) if not pd.isna(w)}, key=lambda k: (-k[0], k[1]))
        for j, (w, norm) in enumerate(lines):  # one line per model width: full width solid, reduced ones lighter
            at = ours[(ours.width == w) & (ours.norm == norm)].sort_values(x)
            ox = eps_x(at.eps, xmax) if x == "eps" else at[x]
            gn = ", GroupNorm" if norm == "group" and m == METHODS["alg1"] else ""
            what = ("; eps is local DP per record" if m == "LATENT" else
                    gn if len(widths) == 1 and w == 1.0 else f", {'full' if w == 1.0 else format(w, 'g') + 'x'} width{gn}")
            ax.errorbar(ox, at["mean"], yerr=at["std"].fillna(0).astype(float), fmt=WIDTH_STYLE[min(j, 2)],
                        color=color, capsize=3, alpha=1.0 if j == 0 else 0.75, label=f"{m} (run here{what})")
        cited = table[(table.method == m) & (table.label == "paper, cited")]
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
        ax.set_xlabel("epsilon (delta = 1e-5)")
    ax.set_ylabel(f"{obj.metric} accuracy (%)")
    ax.set_title(f"{obj.title}: {obj.dataset}" + (f"\n{title_note}" if title_note else ""), fontsize=10)
    ax.legend(fontsize=7, loc="lower right")


def figure(obj: PaperObject, table: pd.DataFrame, *, title_note: str = ""):
    """One panel of accuracy against eps (:func:`draw_accuracy`) as a figure, for an object whose axis is eps.
    Table 9 (q) and Figure 2 (learning rate) are drawn in their own notebooks."""
    import matplotlib.pyplot as plt

    if obj.axis != "eps":
        raise ValueError(f"{obj.name} varies {obj.axis}, not eps: its figure is drawn in notebooks/{obj.name}.ipynb.")
    set_style()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    draw_accuracy(ax, obj, table, title_note)
    fig.tight_layout()
    return fig
