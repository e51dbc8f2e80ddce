"""The headline figure from :mod:`workflow.report.headline`'s two tables: left, every paper cell run here as ours - paper
with its 95% interval; right, each audited model's claimed epsilon against its audited lower bound. Sized to be read
at 800 px wide: short labels, legends below the panels (never over a point), every encoding in a legend.

Left: the marker's shape is the model width (ours; the paper's value is a small grey diamond, a shape no width
uses), a hollow marker a bf16 run, the colour the verdict (:func:`verdict_colour`: four colours for four outcomes),
a solid interval a confidence interval (n >= 2 seeds) and a dashed one one run's prediction interval from the
paper's spread. Right: any number of audit rows (:func:`audit_rows`), each with its claim, its lower bounds (marker:
what the adversary sees; red above the claim, grey otherwise, grey at 0 where the test found nothing), its exact
bound (an arrow off the axis where it is infinite) and its trial ceiling (a grey bar: the most its held-out trials
can certify) where the table has one.
"""

from __future__ import annotations

import math

import pandas as pd

from dirdp import methods
from workflow.report import labels
from workflow.report.compare import LEVEL, MARGIN, PAPER_SPREAD_ONLY

WIDTH_MARKER = {1.0: "o", 0.5: "s", 0.25: "^"}  # ours, by model width (any other width: "v")
OTHER_WIDTH = "v"
PAPER_MARKER = "d"  # the paper's value (grey): a shape no width of ours uses
SEES_MARKER = {"every update": "o", "final model": "s", "one release": "D"}  # the audited lower bound, by adversary
AUDIT_NAMES = {"canary": "canary", "subspace": "subspace test, white box", "batchnorm": "BatchNorm running stats",
               "one run": "one-run audit, real training"}
# the verdict's colours (Okabe-Ito, told apart with colour-blind eyes too): one per outcome of the interval
WITHIN, SHIFTED, OUTSIDE, NONE = "#009E73", "#0072B2", "#D55E00", "0.55"
RED = "#D55E00"  # the right panel: a lower bound above the claim
ZERO_AT = 0.15  # the right panel's log axis: where a lower bound of 0 (no bound found) sits
INF_GAP = 2.0  # an infinite exact bound: its arrow (and the tick "∞") this factor right of the finite values' room,
INF_INSET = 1.3  # and this factor inside the axis' right end, pointing off it
PAPERS_ADJACENCY = ("add", "add/replace", "replace/add")  # add/remove (Definition 2), or both alike: not named
GAP = 0.9  # rows of space between two audits (their name sits in it)
FONT = 10
MS = 8  # the left panel's marker size (points)


def verdict_colour(verdict) -> str:
    """A verdict key's colour: the interval within the margin and containing 0 (:data:`WITHIN`, green); within the
    margin but excluding 0, below_within/above_within (:data:`SHIFTED`, blue); excluding 0 and reaching beyond the
    margin (:data:`OUTSIDE`, orange-red); undecided, one run's (no verdict) or none (:data:`NONE`, grey)."""
    if verdict == "within":
        return WITHIN
    if verdict in ("below_within", "above_within"):
        return SHIFTED
    return OUTSIDE if verdict in ("below", "above") else NONE


def width_marker(width: float) -> str:
    return WIDTH_MARKER.get(width, OTHER_WIDTH)


def _width_name(width: float) -> str:
    return "1x width (the paper's)" if width == 1 else f"{width:g}x width"


def _cell_label(r) -> str:
    eps = "inf" if math.isinf(r.eps) else f"{r.eps:g}"
    method = "" if methods.is_ours(r.method) else f" {methods.short(r.method)}"
    bf16 = ", bf16" if r.precision == "bf16" else ""
    return f"{labels.dataset(r.dataset)} ε={eps}{method}, {r.width:g}x{bf16}"


def _cells_xlim(cells: pd.DataFrame) -> tuple[float, float]:
    """The left panel's x range: every point, std bar and paper spread with room around, and the margin band; an
    interval may run past it (arrowheads), so that one wide interval does not flatten the rest."""
    if not len(cells):
        return -3.0, 3.0
    std = cells.ours_std.fillna(0)
    lo = min((cells["diff"] - std).min(), (-cells.paper_std).min(), -MARGIN)
    hi = max((cells["diff"] + std).max(), cells.paper_std.max(), MARGIN)
    pad = 0.25 * (hi - lo) + 0.5
    return lo - pad, hi + pad


def draw_cells(ax, cells: pd.DataFrame) -> None:
    """One row per cell, ours - paper in accuracy points: the paper at 0 +- its std (small grey diamond, above the
    row), ours (marker by width; hollow: bf16) +- our std over seeds (thick) and the 95% interval of the difference
    (thin, capped: solid for a confidence interval, dashed for one run's prediction interval; an arrowhead where it
    runs past the axis, :func:`_cells_xlim`), coloured by the verdict; n right of everything drawn on the row."""
    xlim = _cells_xlim(cells)
    ax.axvspan(-MARGIN, MARGIN, color=WITHIN, alpha=0.08, lw=0)
    ax.axvline(0, color="0.3", lw=0.8)
    ys = list(range(len(cells)))[::-1]
    for y, r in zip(ys, cells.itertuples()):
        if not pd.isna(r.paper_std):
            ax.errorbar(0, y + 0.3, xerr=r.paper_std, fmt=PAPER_MARKER, mfc="0.45", mec="0.45", ecolor="0.45", ms=5,
                        capsize=2, lw=1.0)
        colour = verdict_colour(r.verdict)
        right, past = r.diff, False  # the rightmost thing drawn on the row (data), and whether it is the axis edge
        if not pd.isna(r.ci_low):  # an end beyond the axis: drawn to the edge, with an arrowhead there
            lo, hi = max(r.ci_low, xlim[0]), min(r.ci_high, xlim[1])
            bars = ax.errorbar(r.diff, y, xerr=[[r.diff - lo], [hi - r.diff]], fmt="none", ecolor=colour, capsize=3,
                               lw=1.2)
            if r.interval == PAPER_SPREAD_ONLY:  # one run: the paper's spread only, a prediction interval
                for line in bars.lines[2]:
                    line.set_linestyle((0, (3, 2)))
            for end, edge, arrow in ((r.ci_low, xlim[0], "<"), (r.ci_high, xlim[1], ">")):
                if end != max(min(end, xlim[1]), xlim[0]):
                    ax.plot(edge, y, arrow, color=colour, ms=6, clip_on=False)
            right, past = max(right, hi), r.ci_high > xlim[1]
        if not pd.isna(r.ours_std):
            ax.plot([r.diff - r.ours_std, r.diff + r.ours_std], [y, y], color=colour, lw=5, alpha=0.4,
                    solid_capstyle="butt")
            right = max(right, r.diff + r.ours_std)
        ax.plot(r.diff, y, width_marker(r.width), color=colour, ms=MS, mew=1.6,
                mfc=colour if r.precision != "bf16" else "white", zorder=3)
        # n beside the row, clear of the marker (half its size) or the arrowhead, whichever is rightmost
        gap = 6 + (4 if past else MS / 2 if right - r.diff < 0.02 * (xlim[1] - xlim[0]) else 2)
        ax.annotate(f"n={r.n}", (right, y), xytext=(gap, 0), textcoords="offset points", va="center", ha="left",
                    fontsize=FONT - 1, color="0.2", annotation_clip=False)
    ax.set_yticks(ys, [_cell_label(r) for r in cells.itertuples()], fontsize=FONT)
    ax.set_ylim(-0.7, max(len(cells), 1) - 0.2)
    ax.set_xlabel("ours − paper (accuracy points)", fontsize=FONT)
    ax.tick_params(axis="x", labelsize=FONT)
    ax.set_title("Accuracy: ours − paper", fontsize=FONT + 1.5, loc="left")
    ax.set_xlim(*xlim)
    if not len(cells):
        ax.text(0.5, 0.5, "no paper cell run here yet", transform=ax.transAxes, ha="center")


def _model(model: str) -> str:
    for key, short in (("softmax regression", "softmax reg."), ("LATENT layer", "LATENT layer"),
                       ("papernot_cnn", "CNN"), ("at initialisation", "Inception 0.25x, init.")):
        if key in model:
            return short
    if model.startswith("inception w="):
        return f"Inception {model.removeprefix('inception w=').split(' ')[0]}x"
    return model[:24]


def _setting(r) -> str:
    if r.setting == "one release":
        return "one release"
    return "1 step, q=1" if r.q >= 1 and r.T == 1 else f"q={r.q:.2g}, T={int(r.T):,}"


def audit_rows(audit: pd.DataFrame) -> list[dict]:
    """The right panel's rows: one per audit, method, model, setting, adjacency and claim, however many the table
    has, each with its points (adversary, lower bound, exact bound, trial ceiling: NaN where unknown, the column
    absent too); rows alike but for their setting merged ("n settings"). Each row has a ``label`` and the ``group``
    it is drawn in (the audit, and its model where it audited one)."""
    rows = {}
    ceilings = audit["ceiling"] if "ceiling" in audit else pd.Series(math.nan, index=audit.index)
    for r, ceiling in zip(audit.itertuples(), ceilings):
        key = (r.audit, r.method, _model(r.model), _setting(r), r.adjacency, r.claimed_eps)
        rows.setdefault(key, []).append((r.adversary_sees, float(r.eps_lower_bound), float(r.eps_exact_bound),
                                         float(ceiling)))
    merged = {}
    for (audit_, method, model, setting, adjacency, claim), points in rows.items():
        key = (audit_, method, model, adjacency, claim, tuple(sorted(map(str, points))))
        merged.setdefault(key, dict(audit=audit_, method=method, model=model, settings=[], adjacency=adjacency,
                                    claim=claim, points=points))["settings"].append(setting)
    out = list(merged.values())
    for row in out:  # the adjacency is named unless it is the paper's (add/remove) or both gave the same row
        setting = row["settings"][0] if len(row["settings"]) == 1 else f"{len(row['settings'])} settings"
        models = {r["model"] for r in out if r["audit"] == row["audit"] and not methods.is_local(r["method"])}
        row["group"] = AUDIT_NAMES.get(row["audit"], row["audit"]) + (f": {row['model']}" if len(models) == 1 else "")
        shown = "" if len(models) == 1 or methods.is_local(row["method"]) else f"{row['model']}, "
        row["label"] = (f"{methods.short(row['method'])}, {shown}{setting}"
                        + ("" if row["adjacency"] in PAPERS_ADJACENCY else f" ({row['adjacency']})"))
    return out


def _audit_x(rows: list[dict]) -> tuple[float, float | None]:
    """The right panel's log axis: its right end (room beyond every finite value drawn, at least 10) and, where some
    exact bound is infinite, where its arrow and the tick "∞" sit (further right, apart from the finite ticks)."""
    finite = [v for row in rows for v in [row["claim"], *(x for p in row["points"] for x in p[1:])]
              if isinstance(v, float) and math.isfinite(v)]
    right = max([10.0, *finite]) * 1.8
    if not any(math.isinf(e) for row in rows for _, _, e, _ in row["points"]):
        return right, None
    return right * INF_GAP * INF_INSET, right * INF_GAP


def draw_audit(ax, audit: pd.DataFrame) -> None:
    """One row per audited model and setting (:func:`audit_rows`, any number): the claimed eps (black bar), the 95%
    lower bound (marker by what the adversary sees; red where it exceeds the claim, with a red line from the claim;
    grey otherwise, at "0" where the test found no bound), the trial ceiling (a light grey bar: the most the row's
    held-out trials can certify) and the exact bound (hollow red circle; a red arrow pointing off the axis' right end,
    at a tick "∞", where it is infinite), on a log axis with 0 at its left end; the audits apart, each named."""
    rows = audit_rows(audit)
    xmax, inf_at = _audit_x(rows)

    def x(v: float) -> float:
        return (inf_at or xmax) if math.isinf(v) else max(v, ZERO_AT)

    y, ys, last = 0.0, [], None
    for row in rows[::-1]:  # bottom up; each audit named above its rows, a line between two
        if last is not None and row["group"] != last:
            ax.axhline(y - 0.5 + GAP / 2, color="0.75", lw=0.8)
            ax.text(0.99, y - 0.5 + GAP / 2, last, transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                    fontsize=FONT - 1.5, color="0.35", style="italic")
            y += GAP
        ys.append(y)
        last = row["group"]
        y += 1
    if last:
        ax.text(0.99, y - 0.5, last, transform=ax.get_yaxis_transform(), ha="right", va="bottom",
                fontsize=FONT - 1.5, color="0.35", style="italic")
    ys = ys[::-1]
    for y, row in zip(ys, rows):
        claim, points = row["claim"], row["points"]
        ax.plot(x(claim), y, "|", color="black", ms=13, mew=2.5, zorder=3)
        for exact in {e for _, _, e, _ in points if not math.isnan(e)}:  # the mechanism's, whoever looks
            if math.isinf(exact):  # no finite eps: an arrow pointing off the axis' right end
                ax.plot(inf_at, y, ">", mfc="none", mec=RED, ms=9, mew=1.6, zorder=4)
            else:
                ax.plot(exact, y, "o", mfc="none", mec=RED, ms=8, mew=1.4)
        for ceiling in {c for _, _, _, c in points if not math.isnan(c)}:  # the most these trials can certify,
            ax.plot(x(ceiling), y, "|", color="0.6", ms=18, mew=4, alpha=0.6, zorder=2)  # taller than the markers
        for k, (sees, lb, _, _) in enumerate(points):  # one marker per adversary, side by side vertically
            dy = 0.0 if len(points) == 1 else 0.3 * (k - (len(points) - 1) / 2)
            above = lb > claim
            if above:
                ax.plot([claim, x(lb)], [y + dy, y + dy], color=RED, lw=2, alpha=0.35)
            ax.plot(x(lb), y + dy, SEES_MARKER.get(sees, "^"), color=RED if above else "0.45", ms=6, zorder=4)
    ax.set_yticks(ys, [row["label"] for row in rows], fontsize=FONT)
    ax.set_xscale("log")
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 1000) if t < (inf_at / INF_GAP if inf_at else xmax) / 1.3]
    ax.set_xticks([ZERO_AT, *ticks, *([inf_at] if inf_at else [])],
                  ["0", *(f"{t:g}" for t in ticks), *(["∞"] if inf_at else [])], fontsize=FONT)
    ax.minorticks_off()
    ax.set_xlim(ZERO_AT / 1.5, xmax)
    ax.set_ylim(-0.7, (max(ys) if ys else 0) + 1.0)
    ax.set_xlabel("epsilon (delta = 1e-5)", fontsize=FONT)
    ax.set_title("Privacy: claim against audit", fontsize=FONT + 1.5, loc="left")
    if not rows:
        ax.text(0.5, 0.5, "no audit results yet", transform=ax.transAxes, ha="center")


def _cells_legend(cells: pd.DataFrame) -> list:
    """The left panel's legend: the paper's marker, ours by width, hollow = bf16, the two kinds of interval, the std
    bar and the four verdict colours."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    widths = sorted(set(cells.width), reverse=True) if len(cells) else []
    level = f"{LEVEL:.0%}"
    handles = [Line2D([], [], marker=PAPER_MARKER, mfc="0.45", mec="0.45", color="0.45", ms=5,
                      label="paper ± std (5 seeds), at 0")]
    handles += [Line2D([], [], marker=width_marker(w), color="0.3", mfc="0.3", ls="none", ms=7,
                       label=f"ours, {_width_name(w)}") for w in widths]
    handles += [Line2D([], [], marker="o", color="0.3", mfc="white", mew=1.5, ls="none", ms=7,
                       label="hollow: bf16 (filled: fp32)"),
                Line2D([], [], color="0.3", lw=5, alpha=0.4, label="ours ± std over seeds"),
                Line2D([], [], color="0.3", lw=1.2, marker="|", ms=6,
                       label=f"{level} CI (n ≥ 2 seeds, Welch)"),
                Line2D([], [], color="0.3", lw=1.2, ls=(0, (3, 2)), marker="|", ms=6,
                       label=f"{level} prediction interval (n = 1)"),
                Patch(color=WITHIN, label=f"within ±{MARGIN:g} point, contains 0"),
                Patch(color=SHIFTED, label=f"within ±{MARGIN:g} point, excludes 0"),
                Patch(color=OUTSIDE, label=f"excludes 0, not within ±{MARGIN:g}"),
                Patch(color=NONE, label="no verdict (undecided, n = 1, no std)")]
    return handles


def _audit_legend(audit: pd.DataFrame) -> list:
    """The right panel's legend: the claim, the lower bound by adversary, what red and grey (and grey at 0) mean,
    the exact bound (finite, infinite), the trial ceiling; an entry only for what the panel draws."""
    from matplotlib.lines import Line2D

    sees = set(audit.adversary_sees) if len(audit) else set()
    exact = pd.to_numeric(audit.eps_exact_bound, errors="coerce") if len(audit) else pd.Series(dtype=float)
    ceilings = audit["ceiling"].notna().any() if "ceiling" in audit and len(audit) else False
    handles = [Line2D([], [], marker="|", color="black", ls="none", ms=11, mew=2.5, label="claimed ε")]
    handles += [Line2D([], [], marker=SEES_MARKER[s], color="0.45", ls="none", ms=6,
                       label=f"{LEVEL:.0%} lower bound, sees {s}")
                for s in SEES_MARKER if s in sees]
    handles += [Line2D([], [], marker="s", color=RED, ls="-", lw=2, ms=6, alpha=0.8,
                       label="red: above the claim (violated)"),
                Line2D([], [], marker="s", color="0.45", ls="none", ms=6,
                       label="grey: not above; at 0: none found")]
    if ceilings:
        handles.append(Line2D([], [], marker="|", color="0.6", alpha=0.6, ls="none", ms=11, mew=4,
                              label="trial ceiling (most the trials can show)"))
    if exact.map(lambda v: math.isfinite(v)).any():
        handles.append(Line2D([], [], marker="o", mfc="none", mec=RED, ls="none", ms=7, mew=1.4,
                              label="exact bound of the mechanism"))
    if exact.map(lambda v: math.isinf(v)).any():
        handles.append(Line2D([], [], marker=">", mfc="none", mec=RED, ls="none", ms=8, mew=1.4,
                              label="exact bound ∞ (no finite ε)"))
    return handles


def draw_headline(cells: pd.DataFrame, audit: pd.DataFrame, *, title: str = ""):
    """The headline figure: :func:`draw_cells` left, :func:`draw_audit` right, each legend below its panel."""
    import matplotlib.pyplot as plt

    n_rows = max(len(cells), len(audit_rows(audit)) + 2, 5)
    height = 3.2 + 0.3 * n_rows
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, height), layout="constrained",
                                      gridspec_kw=dict(width_ratios=[0.8, 1]))
    draw_cells(left, cells)
    draw_audit(right, audit)
    legend = dict(ncol=2, fontsize=FONT - 1.5, frameon=False, handletextpad=0.5, columnspacing=1.2,
                  handlelength=1.8)
    fig.legend(loc="outside lower left", handles=_cells_legend(cells), **legend)
    fig.legend(loc="outside lower right", handles=_audit_legend(audit), **legend)
    if title:
        fig.suptitle(title, fontsize=FONT - 1, x=0.01, ha="left", color="0.35")
    return fig
