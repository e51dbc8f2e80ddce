"""The headline figure (figures/<profile>/headline.png): the paper's privacy claim against what the audits show at
the paper's protocol, and beside it the paper's-width accuracy cells.

Left, one labelled row per test (:func:`privacy_rows`, from the typed columns of the audit CSVs): the claim (a black
bar), the exact bound where the audit computes one (at the axis' break to infinity when no finite eps holds), the
95% lower bound from the trials, drawn as a bound ("at least 4.9", an arrow) where the trial count caps it, and for
DP-SGD its own eps. Vermillion means "above its claim" and nothing else. Right, Algorithm 1's cells at the paper's
width (:func:`accuracy_rows`), one row per eps holding each data set's cell (a marker each): ours - paper with its 95%
interval for a mean over n >= 2 seeds, one run as a point alone. The title says what the rows show, from the same rows (:func:`conclusion`). Every audited row of the profile
is in its audit's CSV and docs/audit.md; every cell in ``headline_cells.csv`` and the README."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dirdp import methods, provenance
from dirdp.protocol import fmt_eps
from workflow.audit import subspace_rows
from workflow.report import labels, style

PAPER_WIDTH = 1.0
BREAK_X = 30.0  # the axis' finite part ends here, or at 3x the largest finite value drawn where that is larger
ZERO_X = 0.03  # a lower bound of 0 (nothing found) sits at the left edge
CAPPED = 1e-6  # a lower bound within this of its trial ceiling is capped by the trial count
NEAR_CEILING = 0.01  # the canary audit: a bound within 1% of its ceiling (an error or two among the held-out trials)
PRIVACY_COLUMNS = ["method", "test", "setting", "claim", "lower", "capped", "exact", "own_eps"]
MAX_ROWS = 12  # both panels together: the privacy rows and the accuracy strip's eps rows (each holds every data set)
MARKERS = ["o", "s", "^", "D", "v"]  # the accuracy strip's data sets, in the order the cells list them


def _read(results: Path, name: str) -> pd.DataFrame | None:
    path = Path(results) / f"{name}.csv"
    return provenance.read_csv(path)[0] if path.exists() else None


def first_layer_rows(fl: pd.DataFrame, *, each_setting: bool = False) -> pd.DataFrame:
    """The exact first-layer test (``audit_first_layer.csv``), each setting with its own statistic (either; with a
    conv bias the weights' alone, the bias moving without data): at the paper's width one row per neighbouring
    relation, its bounds the weakest over the settings; or, ``each_setting``, one row per width, precision, conv bias
    and relation."""
    own = fl[(fl.statistic == "either") | (fl.conv_bias.map(labels.flag) & (fl.statistic == "first_conv"))]
    if not each_setting:
        own = own[own.width == PAPER_WIDTH]
    keys = ["width", "precision", "conv_bias", "adjacency"] if each_setting else ["adjacency"]
    rows = []
    for _, g in own.groupby(keys, sort=False):
        r = g.iloc[0]
        settings = ", ".join(dict.fromkeys(f"{p}{' + conv bias' if labels.flag(b) else ''}"
                                           for p, b in zip(g.precision, g.conv_bias)))
        model = "the paper's Inception" if r.width == PAPER_WIDTH else f"Inception {r.width:g}x"
        rows.append(dict(method=methods.ALG1,
                         test=f"Algorithm 1, {model}: final model, {labels.ADJACENCIES[r.adjacency]}",
                         setting=f"exact test; q = {r.q:.2g}, T = {r['T']:,.0f}; {settings}",
                         claim=g.matched_claim_eps.max(), lower=g.eps_lower_bound.min(),
                         capped=bool((g.eps_lower_bound >= g.ceiling - CAPPED).all()), exact=g.exact_bound.min(),
                         own_eps=math.nan))
    return pd.DataFrame(rows, columns=PRIVACY_COLUMNS)


def control_rows(control: pd.DataFrame) -> pd.DataFrame:
    """The DP-SGD control with power (``audit_control.csv``): each setting beside DP-SGD's own eps."""
    return pd.DataFrame([dict(method=methods.DPSGD, test="control: DP-SGD, every update, add/remove",
                              setting=f"likelihood-ratio test; q = {r.q:.2g}, T = {r.T:,.0f}", claim=r.claimed_eps,
                              lower=r.eps_lower_bound, capped=False, exact=math.nan, own_eps=r.mechanism_eps)
                         for r in control.itertuples()], columns=PRIVACY_COLUMNS)


def canary_rows(canary: pd.DataFrame, delta: float) -> pd.DataFrame:
    """The canary audit (``audit_canary.csv``, made at ``delta``): each method and setting against its claim, its
    statistics in one row where they give the same bounds; a bound drawn as capped within :data:`NEAR_CEILING` of
    what the held-out trials can show (no false positive or negative), DP-SGD beside its own eps."""
    from dirdp.audit import epsilon_lower_bound

    rows = []
    same = ["method", "q", "T", "claimed_eps", "eps_lower_bound", "eps_exact_bound", "held_out_per_world"]
    for _, g in canary.groupby(same, sort=False, dropna=False):
        r = g.iloc[0]
        held = int(r.held_out_per_world)
        ceiling = epsilon_lower_bound(false_positives=0, n_negatives=held, false_negatives=0, n_positives=held,
                                      delta=delta).epsilon
        local = methods.is_local(r.method)
        seen = "one release (local DP), likelihood ratio" if local else " and ".join(labels.SEES[s] for s in g.statistic)
        rows.append(dict(method=r.method, test=f"{methods.audit_label(r.method)}: {seen}",
                         setting="" if local else f"q = {r.q:g}, T = {r['T']:,.0f}", claim=r.claimed_eps,
                         lower=r.eps_lower_bound, capped=r.eps_lower_bound >= ceiling * (1 - NEAR_CEILING),
                         exact=r.eps_exact_bound,
                         own_eps=r.certified_eps if methods.SPECS[r.method].audit == methods.CLIPPED else math.nan))
    return pd.DataFrame(rows, columns=PRIVACY_COLUMNS)


def privacy_rows(results: str | Path) -> pd.DataFrame:
    """The tests that decide the paper's claim, at most one row each (columns :data:`PRIVACY_COLUMNS`):

    - the exact first-layer test on the paper's Inception at the paper's width, final model, one row per neighbouring
      relation (:func:`first_layer_rows`);
    - Algorithm 1 seen at every update (``audit_subspace.csv``: add/remove at the paper's q, the longest run);
    - the one-run audit of a real training (``audit_one_run.csv``: Algorithm 1's best score at its best k);
    - the DP-SGD control with power, each setting (:func:`control_rows`), beside DP-SGD's own eps."""
    parts = []
    fl = _read(results, "audit_first_layer")
    if fl is not None:
        parts.append(first_layer_rows(fl))
    rows = []
    sub = _read(results, "audit_subspace")
    if sub is not None:
        every = sub[(sub.method == methods.ALG1) & (sub.adversary_sees == subspace_rows.EVERY_UPDATE) & (sub.q < 1)
                    & (sub.adjacency == "add")].sort_values("T", ascending=False)
        for r in every.head(1).itertuples():
            rows.append(dict(method=methods.ALG1,
                             test=f"Algorithm 1, {labels.audited(r.model, r.width)}: every update, add/remove",
                             setting=f"subspace test; q = {r.q:.2g}, T = {r.T:,.0f}", claim=r.matched_claim_eps,
                             lower=r.eps_lower_bound, capped=r.eps_lower_bound >= r.ceiling - CAPPED,
                             exact=r.exact_bound, own_eps=math.nan))
    one = _read(results, "audit_one_run")
    if one is not None:
        done = one[(one.verdict != "not_run_yet") & one.best.map(labels.flag) & (one.method == methods.ALG1)]
        for r in done.sort_values("eps_lower_bound", ascending=False).head(1).itertuples():
            rows.append(dict(method=methods.ALG1,
                             test=f"Algorithm 1, {labels.audited(r.model, r.width)}: final model, add/remove",
                             setting=f"one-run audit of a real training; {r.canaries:,.0f} canaries, "
                                     f"{r.score.replace('_', ' ')}", claim=r.claimed_eps, lower=r.eps_lower_bound,
                             capped=r.eps_lower_bound >= r.most_these_guesses_can_show - CAPPED, exact=math.nan,
                             own_eps=math.nan))
    parts.append(pd.DataFrame(rows, columns=PRIVACY_COLUMNS))
    control = _read(results, "audit_control")
    if control is not None:
        parts.append(control_rows(control))
    return pd.concat([p for p in parts if len(p)] or [pd.DataFrame(columns=PRIVACY_COLUMNS)], ignore_index=True)


def accuracy_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """Algorithm 1's cells at the paper's width (``headline_cells.csv``), MNIST first, by eps."""
    t = cells[(cells.width == PAPER_WIDTH) & (cells.method == methods.label(methods.ALG1)) & cells["diff"].notna()]
    return t.assign(order=t.dataset != "mnist").sort_values(["order", "eps"]).drop(columns="order")


def conclusion(privacy: pd.DataFrame) -> str:
    """What the privacy rows show, in one sentence (the figure's title)."""
    alg1 = privacy[privacy.method == methods.ALG1]
    over = alg1[(alg1.exact > alg1.claim) | (alg1.lower > alg1.claim)]
    control = privacy[privacy.method == methods.DPSGD]
    parts = []
    if len(over):
        parts.append("no finite ε covers Algorithm 1's trained model" if over.exact.map(math.isinf).any()
                     else "Algorithm 1's bounds exceed its claim")
    elif len(alg1):
        parts.append("no audit here finds Algorithm 1 above its claim")
    if len(control):
        parts.append("the DP-SGD control stays under its own ε" if (control.lower <= control.own_eps).all()
                     else "the DP-SGD control exceeds its own ε: the audit is wrong")
    return ("At the paper's protocol " + " while ".join(parts) + ".") if parts else "No audit here yet."


def _draw_privacy(ax, rows: pd.DataFrame) -> None:
    finite = [v for v in (*rows.claim, *rows.lower, *rows.exact, *rows.own_eps) if math.isfinite(v)]
    brk = max(BREAK_X, 3 * max(finite, default=0))
    inf_x = 2 * brk  # where an infinite bound is drawn, past the break

    def _x(v: float) -> float:
        return inf_x if math.isinf(v) else max(v, ZERO_X)

    y = range(len(rows))[::-1]
    for yi, r in zip(y, rows.itertuples()):
        above = r.lower > r.claim
        colour = style.VIOLATES if above else style.BLUE
        if not math.isnan(r.exact):  # the exact bound: the main marker
            exact_colour = style.VIOLATES if r.exact > r.claim else style.BLUE
            ax.plot(_x(r.exact), yi, ">" if math.isinf(r.exact) else "s", ms=11, color=exact_colour, zorder=4)
            ax.annotate("no finite ε" if math.isinf(r.exact) else f"exact {r.exact:.1f}", (_x(r.exact), yi),
                        xytext=(0, 9), textcoords="offset points", ha="center", fontsize=10, color=exact_colour)
        if r.capped:  # a bound the trial count caps: at least this much, maybe more
            ax.annotate("", xy=(r.lower * 1.6, yi), xytext=(r.lower, yi),
                        arrowprops=dict(arrowstyle="-|>", color=colour, lw=2), zorder=3)
            ax.annotate(f"≥ {r.lower:.1f}", (r.lower, yi), xytext=(0, -16), textcoords="offset points", ha="left",
                        fontsize=10, color=colour)
        else:
            ax.plot(_x(r.lower), yi, "o", ms=9, color=colour, zorder=4)
            ax.annotate(f"{r.lower:.2f}", (_x(r.lower), yi), xytext=(0, -16), textcoords="offset points",
                        ha="center", fontsize=10, color=colour)
        if not math.isnan(r.own_eps):
            ax.plot(r.own_eps, yi, "D", ms=8, mfc="white", mec=style.BLACK, mew=1.5, zorder=4)
        ax.plot(r.claim, yi, "|", ms=22, mew=3, color=style.BLACK, zorder=5)
    ax.set_xscale("log")
    ax.set_xlim(ZERO_X / 1.3, inf_x * 1.5)
    ticks = [t for t in (0.1, 0.3, 1, 3, 10, 30, 100, 300) if t < brk]
    ax.set_xticks([ZERO_X, *ticks, inf_x], ["0", *(f"{t:g}" for t in ticks), "∞"])
    ax.axvspan(brk, brk * 1.25, color="white", zorder=2)  # the break
    ax.text(brk * 1.12, -0.9, "//", ha="center", va="center", fontsize=12)
    ax.set_ylim(-0.9, len(rows) - 0.4)
    ax.set_yticks(list(y), [f"{r.test}\n{r.setting}" for r in rows.itertuples()], fontsize=11)
    ax.grid(axis="y", visible=False)
    ax.set_xlabel("ε (δ = 1e-5)")
    handles = [ax.plot([], [], "|", ms=14, mew=3, color=style.BLACK)[0],
               ax.plot([], [], "o", ms=8, color=style.BLUE)[0], ax.plot([], [], "o", ms=8, color=style.VIOLATES)[0],
               ax.plot([], [], "D", ms=7, mfc="white", mec=style.BLACK)[0]]
    ax.legend(handles, ["claimed ε", "95% lower bound (arrow: capped by the trials)", "above the claim",
                        "DP-SGD's own ε"], loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)


def accuracy_eps(cells: pd.DataFrame) -> list[float]:
    """The accuracy strip's rows: the cells' eps values, ascending, inf last."""
    return sorted({float(e) for e in cells.eps})


def _draw_accuracy(ax, cells: pd.DataFrame) -> None:
    eps = accuracy_eps(cells)
    row = {e: len(eps) - 1 - i for i, e in enumerate(eps)}
    datasets = list(dict.fromkeys(cells.dataset))
    spread = 0.25 if len(datasets) > 1 else 0.0  # a row's data sets, top to bottom in the cells' order
    offset = {d: spread * (1 - 2 * i / max(len(datasets) - 1, 1)) for i, d in enumerate(datasets)}
    marker = {d: MARKERS[i % len(MARKERS)] for i, d in enumerate(datasets)}
    ax.axvspan(-1, 1, color=style.GREEN, alpha=0.12, lw=0)
    ax.axvline(0, color=style.GREY, lw=1)
    colours = {"within": style.GREEN, "below": style.ORANGE, "above": style.ORANGE}
    for r in cells.itertuples():
        yi = row[float(r.eps)] + offset[r.dataset]
        colour = colours.get(r.verdict, style.GREY)
        if r.n >= 2 and not labels.blank(r.ci_low):
            ax.plot([r.ci_low, r.ci_high], [yi, yi], color=colour, lw=3, solid_capstyle="butt")
        ax.plot(r.diff, yi, marker[r.dataset], ms=9, color=colour, mfc=colour if r.n >= 2 else "white", mew=2)
        ax.annotate(f"n = {int(r.n)}", (1, yi), xycoords=("axes fraction", "data"), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=10)
    ax.set_yticks([row[e] for e in eps], [f"ε = {'∞' if math.isinf(e) else fmt_eps(e)}" for e in eps])
    for e in eps[:-1]:  # a thin rule between the eps rows
        ax.axhline(row[e] - 0.5, color=style.GREY, lw=0.5, alpha=0.5)
    drawn = cells[cells.n >= 2]  # the intervals drawn: a one-run cell's (from the paper's spread) is not
    lim = max([3.0, *cells["diff"].abs().tolist(), *drawn.ci_low.abs().dropna().tolist(),
               *drawn.ci_high.abs().dropna().tolist()]) * 1.1
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-0.6, max(len(eps), 1) - 0.4)
    ax.set_xlabel("ours − paper (points)")
    ax.set_title("Accuracy, paper's width", loc="left")
    handles = [ax.plot([], [], marker[d], ms=8, color=style.BLACK, mfc="white", mew=1.5)[0] for d in datasets]
    ax.legend(handles, [labels.dataset(d) for d in datasets], loc="upper center", bbox_to_anchor=(0.5, -0.14),
              ncol=1, frameon=False, fontsize=10)
    ax.text(0, -0.14 - 0.06 * max(len(datasets), 1), "green: within ±1 point; orange: outside\n"
            "grey: undecided; hollow: one run", transform=ax.transAxes, va="top", fontsize=10)


def rows_figure(rows: pd.DataFrame, title: str):
    """A figure of privacy rows alone (:func:`privacy_rows`' columns), as the headline's left panel draws them."""
    import matplotlib.pyplot as plt

    style.use()
    fig, ax = plt.subplots(figsize=(8, 0.62 * max(len(rows), 3) + 2.0))
    _draw_privacy(ax, rows.reset_index(drop=True))
    ax.set_title(title, loc="left")
    return fig


def draw_headline(cells: pd.DataFrame, results: str | Path):
    """The figure, and the rows it draws (privacy; accuracy, a cell a row): at most :data:`MAX_ROWS` rows drawn, the
    privacy rows and the accuracy strip's eps rows together."""
    import matplotlib.pyplot as plt

    style.use()
    privacy, accuracy = privacy_rows(results), accuracy_rows(cells)
    strip = len(accuracy_eps(accuracy))
    if len(privacy) + strip > MAX_ROWS:
        raise ValueError(f"{len(privacy)} privacy rows and {strip} eps rows of accuracy: more than {MAX_ROWS} rows, "
                         "not read at a glance")
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.5, 0.62 * max(len(privacy), strip, 3) + 2.4),
                                  gridspec_kw=dict(width_ratios=[2.3, 1], wspace=0.55))
    _draw_privacy(ax, privacy)
    ax.set_title("Claimed against audited ε (each row's q and T)", loc="left")
    _draw_accuracy(ax2, accuracy)
    fig.suptitle(conclusion(privacy), fontsize=style.FONT + 1)
    return fig, privacy, accuracy
