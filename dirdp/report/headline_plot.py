"""The headline figure from :mod:`dirdp.report.headline`'s two tables: left, every paper cell run here as ours - paper
with its 95% interval; right, each audited model's claimed epsilon against its audited lower bound. Sized to be read
at 800 px wide: short labels, legends below the panels (never over a point), colour for the verdict."""

from __future__ import annotations

import math

import pandas as pd

from dirdp import methods
from dirdp.report.compare import MARGIN, ONE_RUN

WIDTH_MARKER = {1.0: "D", 0.5: "s", 0.25: "o"}  # ours, by model width (any other width: "^")
SEES_MARKER = {"every update": "o", "final model": "s", "one release": "D"}  # the audited lower bound, by adversary
NAMES = {"mnist": "MNIST", "fashionmnist": "FashionMNIST", "cifar10": "CIFAR10", "svhn": "SVHN",
         "dermamnist": "DermaMNIST"}
AUDIT_NAMES = {"canary": "canary", "subspace": "subspace test, white box", "batchnorm": "BatchNorm running stats"}
ZERO_AT, INF_AT = 0.15, 400.0  # the right panel's log axis: where a lower bound of 0 and an infinite bound sit
PAPERS_ADJACENCY = ("add", "add/replace", "replace/add")  # add/remove (Definition 2), or both alike: not named
GAP = 0.9  # rows of space between two audits (their name sits in it)
FONT = 10


def verdict_colour(verdict) -> str:
    """A verdict's colour: within the margin green (below or above it too), outside it red; undecided, one run's
    (no verdict) or none grey."""
    if not isinstance(verdict, str) or verdict.startswith("undecided") or verdict == ONE_RUN:
        return "0.5"
    return "tab:green" if f"within {MARGIN:g} point" in verdict else "tab:red"


def _cell_label(r) -> str:
    eps = "inf" if math.isinf(r.eps) else f"{r.eps:g}"
    method = "" if methods.is_ours(r.method) else f" {methods.short(r.method)}"
    bf16 = ", bf16" if r.precision == "bf16" else ""
    return f"{NAMES.get(r.dataset, r.dataset)} ε={eps}{method}, {r.width:g}x{bf16}"


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
    """One row per cell, ours - paper in accuracy points: the paper at 0 +- its std (grey, hollow), ours (marker by
    width; hollow: bf16) +- our std over seeds (thick) and the 95% interval of the difference (thin, capped; an
    arrowhead where it runs past the axis, :func:`_cells_xlim`), coloured by the verdict; n beside each."""
    xlim = _cells_xlim(cells)
    ax.axvspan(-MARGIN, MARGIN, color="tab:green", alpha=0.1, lw=0)
    ax.axvline(0, color="0.3", lw=0.8)
    ys = list(range(len(cells)))[::-1]
    for y, r in zip(ys, cells.itertuples()):
        if not pd.isna(r.paper_std):
            ax.errorbar(0, y + 0.25, xerr=r.paper_std, fmt="d", mfc="white", mec="0.35", ecolor="0.35", ms=5,
                        capsize=2, lw=1.0)
        colour = verdict_colour(r.verdict)
        ends = [r.diff]
        if not pd.isna(r.ci_low):  # an end beyond the axis: drawn to the edge, with an arrowhead there
            lo, hi = max(r.ci_low, xlim[0]), min(r.ci_high, xlim[1])
            ax.errorbar(r.diff, y, xerr=[[r.diff - lo], [hi - r.diff]], fmt="none", ecolor=colour, capsize=3, lw=1.2)
            for end, edge, arrow in ((r.ci_low, xlim[0], "<"), (r.ci_high, xlim[1], ">")):
                if end != max(min(end, xlim[1]), xlim[0]):
                    ax.plot(edge, y, arrow, color=colour, ms=6, clip_on=False)
            ends.append(hi)
        if not pd.isna(r.ours_std):
            ax.plot([r.diff - r.ours_std, r.diff + r.ours_std], [y, y], color=colour, lw=5, alpha=0.45,
                    solid_capstyle="butt")
            ends.append(r.diff + r.ours_std)
        ax.plot(r.diff, y, WIDTH_MARKER.get(r.width, "^"), color=colour, ms=8, mew=1.5,
                mfc=colour if r.precision != "bf16" else "white")
        ax.annotate(f"n={r.n}", (max(ends), y), xytext=(5, -1), textcoords="offset points", va="center",
                    fontsize=FONT - 1, color="0.2")
    ax.set_yticks(ys, [_cell_label(r) for r in cells.itertuples()], fontsize=FONT)
    ax.set_ylim(-0.7, max(len(cells), 1) - 0.3)
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
        return f"Inception {model.removeprefix('inception w=')}x"
    return model[:24]


def _setting(r) -> str:
    if r.setting == "one release":
        return "one release"
    return "1 step, q=1" if r.q >= 1 and r.T == 1 else f"q={r.q:.2g}, T={int(r.T):,}"


def audit_rows(audit: pd.DataFrame) -> list[dict]:
    """The right panel's rows: one per audit, method, model, setting, adjacency and claim, each with its points
    (adversary, lower bound, exact bound); rows alike but for their setting merged ("n settings"). Each row has a
    ``label`` and the ``group`` it is drawn in (the audit, and its model where it audited one)."""
    rows = {}
    for r in audit.itertuples():
        key = (r.audit, r.method, _model(r.model), _setting(r), r.adjacency, r.claimed_eps)
        rows.setdefault(key, []).append((r.adversary_sees, r.eps_lower_bound, r.eps_exact_bound))
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


def _x(v: float) -> float:
    return INF_AT if math.isinf(v) else max(v, ZERO_AT)


def draw_audit(ax, audit: pd.DataFrame) -> None:
    """One row per audited model and setting: the claimed eps (black bar), the 95% lower bound (marker by what the
    adversary sees; red where it exceeds the claim, with a red line from the claim) and the exact bound (hollow red
    circle), on a log axis with 0 and inf at its ends; the audits apart, each named."""
    rows = audit_rows(audit)
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
        claim = row["claim"]
        ax.plot(_x(claim), y, "|", color="black", ms=13, mew=2.5, zorder=3)
        for exact in {e for _, _, e in row["points"] if not pd.isna(e)}:  # the mechanism's, whoever looks
            ax.plot(_x(exact), y, "o", mfc="none", mec="tab:red", ms=8, mew=1.4)
        for k, (sees, lb, _) in enumerate(row["points"]):  # one marker per adversary, side by side vertically
            dy = 0.0 if len(row["points"]) == 1 else 0.3 * (k - (len(row["points"]) - 1) / 2)
            above = lb > claim
            if above:
                ax.plot([claim, lb], [y + dy, y + dy], color="tab:red", lw=2, alpha=0.35)
            ax.plot(_x(lb), y + dy, SEES_MARKER.get(sees, "^"), color="tab:red" if above else "0.5", ms=6, zorder=4)
    ax.set_yticks(ys, [row["label"] for row in rows], fontsize=FONT)
    ax.set_xscale("log")
    ax.set_xticks([ZERO_AT, 1, 2, 5, 10, 100, INF_AT], ["0", "1", "2", "5", "10", "100", "inf"],
                  fontsize=FONT)
    ax.minorticks_off()
    ax.set_xlim(ZERO_AT / 1.5, INF_AT * 1.5)
    ax.set_ylim(-0.7, (max(ys) if ys else 0) + 1.0)
    ax.set_xlabel("epsilon (delta = 1e-5)", fontsize=FONT)
    ax.set_title("Privacy: claim against audit", fontsize=FONT + 1.5, loc="left")
    if not rows:
        ax.text(0.5, 0.5, "no audit results yet", transform=ax.transAxes, ha="center")


def draw_headline(cells: pd.DataFrame, audit: pd.DataFrame, *, title: str = ""):
    """The headline figure: :func:`draw_cells` left, :func:`draw_audit` right, each legend below its panel."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    n_rows = max(len(cells), len(audit_rows(audit)) + 2, 5)
    height = 2.3 + 0.3 * n_rows
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, height), layout="constrained",
                                      gridspec_kw=dict(width_ratios=[0.75, 1]))
    draw_cells(left, cells)
    draw_audit(right, audit)
    widths = sorted(set(cells.width), reverse=True) if len(cells) else []
    legend = dict(ncol=2, fontsize=FONT - 1, frameon=False, handletextpad=0.4, columnspacing=1.0)
    paper = Line2D([], [], marker="d", mfc="white", mec="0.35", color="0.35", label="paper ± std (5 seeds)")
    fig.legend(loc="outside lower left", handles=[paper]
                + [Line2D([], [], marker=WIDTH_MARKER.get(w, "^"), color="0.3", ls="none",
                          label=f"ours, {'full' if w == 1 else format(w, 'g') + 'x'} width") for w in widths]
                + [Line2D([], [], color="0.3", lw=1.2, label="95% CI of ours − paper"),
                   Line2D([], [], color="0.3", lw=5, alpha=0.45, label="ours ± std over seeds"),
                   Patch(color="tab:green", label=f"CI within ±{MARGIN:g} point"),
                   Patch(color="tab:red", label=f"CI outside ±{MARGIN:g}, excludes 0"),
                   Patch(color="0.5", label="undecided / n = 1 / no paper std")], **legend)
    fig.legend(loc="outside lower right", handles=[
                   Line2D([], [], marker="|", color="black", ls="none", ms=11, mew=2.5, label="claimed ε"),
                   Line2D([], [], marker="o", mfc="none", mec="tab:red", ls="none", ms=7, label="exact bound")]
                 + [Line2D([], [], marker=SEES_MARKER[s], color="0.3", ls="none", label=f"95% bound, {s}")
                    for s in SEES_MARKER if s in set(audit.adversary_sees)]
                 + [Patch(color="tab:red", label="bound above the claim")], **legend)
    if title:
        fig.suptitle(title, fontsize=FONT - 1, x=0.01, ha="left", color="0.35")
    return fig
