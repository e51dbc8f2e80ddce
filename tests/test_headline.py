"""The headline's tables and its figure: the cells are the objects' own rows (paper model and protocol, a printed
value); the audit CSVs it draws from say what the findings say; the figure draws the tests of the paper's claim and the paper's-width cells (a row per eps) in at most 12
rows, a bound the trials cap as a bound, vermillion for "above the claim" alone, one run as a point alone."""

import math
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from dirdp import provenance
from workflow.report import headline, headline_plot, labels, style

matplotlib.use("Agg")
REPO = Path(__file__).resolve().parents[1]
CPU = REPO / "results" / "cpu"


def _row(**kw):
    base = dict(object="table4_fashionmnist", dataset="fashionmnist", method="Algorithm 1", origin="here", eps=2.0,
                width=0.25, norm="batch", precision="fp32", mean=86.69, std=2.81, n=3, paper=91.13, paper_std=0.18,
                diff=-4.44, ci_low=-11.396, ci_high=2.516, interval="welch", interval_df=2.0, verdict="undecided",
                status="compared")
    return dict(base, **kw)


def test_the_cells_are_the_paper_cells_run_here_with_the_tables_own_estimate():
    table = pd.DataFrame([
        _row(),
        _row(width=1.0, precision="bf16", mean=91.0, std=0.2, n=5, diff=-0.13, ci_low=-0.408, ci_high=0.148,
             interval_df=7.9, verdict="within"),
        _row(norm="group"),  # Algorithm 1's GroupNorm option: not the paper's model
        _row(method="LATENT", paper=None, paper_std=None, diff=None, verdict=None, status="no_paper_value"),
        _row(status="not_comparable", verdict=None, ci_low=None, ci_high=None),
        _row(origin="paper", mean=None, n=0, status="not_run", why="not in the 'cpu' profile's grid"),
    ])
    cells = headline.headline_cells([table])
    assert list(cells.columns) == headline.CELL_COLUMNS and "interval_df" in cells
    assert list(zip(cells.width, cells.precision)) == [(0.25, "fp32"), (1.0, "bf16")]
    first, full = cells.iloc[0], cells.iloc[1]
    assert (first.ours_mean, first.paper_mean, first.paper_n, first.ci_low, first.verdict) == \
        (86.69, 91.13, 5, -11.396, "undecided")
    assert (first.interval, first.interval_df, full.verdict) == ("welch", 2.0, "within")
    assert labels.verdict(first.verdict, first.n) == "undecided (n = 3)"
    assert labels.interval_long(first.interval, first.interval_df) == "95% CI, Welch (df = 2.0)"
    assert labels.verdict(full.verdict, full.n) == "within 1 point of the paper"


def test_the_committed_audits_say_what_the_headline_draws():
    """The audit CSVs the privacy panel is drawn from, checked for what the README's findings say of them: the exact
    first-layer test finds no finite eps at the paper's claims (add/remove 1, replace-one 2 by group privacy); the
    canary audit bounds Algorithm 1 far above its claim; the DP-SGD control finds a bound above zero and not above
    DP-SGD's own eps; each subspace row faces the claim for its own adjacency."""
    def read(name):
        return provenance.read_csv(CPU / f"{name}.csv")[0]

    first = read("audit_first_layer")
    first = first[first.statistic == "either"]
    assert first.exact_bound.map(math.isinf).all() and (first.eps_lower_bound > first.matched_claim_eps).all()
    assert dict(zip(first.adjacency, first.matched_claim_eps)) == {"add": 1.0, "replace": 2.0}
    canary = read("audit_canary")
    alg1 = canary[canary.method == "alg1"]
    assert len(alg1) and (alg1.claimed_eps == 1.0).all() and (alg1.eps_lower_bound > 4 * alg1.claimed_eps).all()
    control = read("audit_control")
    assert len(control) == 2 and ((control.eps_lower_bound > 0) & (control.eps_lower_bound <= control.mechanism_eps)).all()
    sub = read("audit_subspace")
    pair = sub[(sub.method == "alg1") & (sub["T"] == 1000) & (sub.adversary_sees == "every update")]
    claims = dict(zip(pair.adjacency, pair.matched_claim_eps))
    assert claims["replace"] == pytest.approx(2 * claims["add"])


def _cells():
    from workflow.report.objects import COLUMNS

    return headline.headline_cells([pd.DataFrame([
        _row(),
        _row(eps=2.0, width=1.0, precision="bf16", mean=90.97, std=0.53, n=3, diff=-0.16, ci_low=-0.5,
             ci_high=0.4, interval="welch", interval_df=2.3, verdict="within"),
        _row(eps=1.0, width=0.5, n=1, std=None, diff=-0.73, ci_low=-1.277, ci_high=-0.183,
             interval="paper_spread", interval_df=None, verdict="one_run"),
        _row(eps=math.inf, n=1, std=None, paper_std=None, diff=-2.55, ci_low=None, ci_high=None,
             interval="no_paper_spread", interval_df=None, verdict=None, status="no_spread"),
    ]).reindex(columns=COLUMNS)])


def test_the_headline_draws_the_tests_of_the_claim_and_the_papers_width_cells_at_most_12_rows(tmp_path):
    fig, privacy, accuracy = headline_plot.draw_headline(_cells(), CPU)
    assert len(privacy) + len(headline_plot.accuracy_eps(accuracy)) <= headline_plot.MAX_ROWS == 12
    # the exact first-layer test on the paper's Inception at 1x: one row per neighbouring relation, its claim the
    # relation's own (1 and 2), no finite eps, the trials' bound capped by their count
    inception = privacy[privacy.test.str.contains("the paper's Inception")]
    assert list(inception.claim) == [1.0, 2.0] and inception.exact.map(math.isinf).all() and inception.capped.all()
    assert inception.setting.str.contains("bf16, fp32, fp32 \\+ conv bias").all()  # its settings, weakest bound
    control = privacy[privacy.own_eps.notna()]
    assert len(control) == 2 and (control.lower <= control.own_eps).all() and (control.own_eps <= control.claim).all()
    assert headline_plot.conclusion(privacy).startswith("At the paper's protocol no finite ε covers")
    assert fig.texts[0].get_text() == headline_plot.conclusion(privacy)  # the title says it
    # the accuracy strip: Algorithm 1 at the paper's width only
    assert (accuracy.width == 1.0).all() and len(accuracy) == 1
    png = style.save(fig, tmp_path, "headline")
    from PIL import Image

    assert max(Image.open(png).size) <= style.MAX_PIXELS and (tmp_path / "headline.pdf").exists()


def test_every_algorithm_1_cell_of_tables_2_and_4_at_the_papers_width_fits_in_12_rows():
    """The accuracy strip has a row per eps, each with both data sets' cells (a marker each, the data set's own): the
    ten cells of Tables 2 and 4 (eps 0.5, 1, 2, 4, inf) are five rows beside the privacy rows; more rows than 12 are
    refused, not squeezed."""
    from workflow.report.objects import COLUMNS

    ten = [_row(object=f"table{2 if d == 'mnist' else 4}_{d}", dataset=d, eps=e, width=1.0, precision="bf16", n=1,
                std=None, interval="paper_spread", interval_df=None, verdict="one_run")
           for d in ("mnist", "fashionmnist") for e in (0.5, 1.0, 2.0, 4.0, math.inf)]
    cells = headline.headline_cells([pd.DataFrame(ten).reindex(columns=COLUMNS)])
    fig, privacy, accuracy = headline_plot.draw_headline(cells, CPU)
    assert len(accuracy) == 10 and len(privacy) + 5 <= 12
    ax = fig.axes[1]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["ε = 0.5", "ε = 1", "ε = 2", "ε = 4", "ε = ∞"]
    marks = [line for line in ax.get_lines() if line.get_marker() in headline_plot.MARKERS and len(line.get_xdata())]
    by_marker = {m: [line.get_ydata()[0] for line in marks if line.get_marker() == m] for m in ("o", "s")}
    assert len(by_marker["o"]) == len(by_marker["s"]) == 5  # MNIST and FashionMNIST in each row, a marker each
    assert all(abs(a - b) < 1 and a > b for a, b in zip(sorted(by_marker["o"]), sorted(by_marker["s"])))
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["MNIST", "FashionMNIST"]
    more = [*ten, *(_row(eps=e, width=1.0) for e in (8.0, 16.0, 32.0))]
    with pytest.raises(ValueError, match="6 privacy rows and 8 eps rows of accuracy: more than 12"):
        headline_plot.draw_headline(headline.headline_cells([pd.DataFrame(more).reindex(columns=COLUMNS)]), CPU)


def test_a_bound_the_trials_cap_is_drawn_as_a_bound_and_vermillion_means_above_the_claim():
    fig, privacy, _ = headline_plot.draw_headline(_cells(), CPU)
    ax = fig.axes[0]
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == privacy.capped.sum() >= 2  # one arrow per capped bound, pointing right (more is possible)
    assert all(t.xy[0] > t.xyann[0] for t in arrows)
    labels_ = [t.get_text() for t in ax.texts]
    assert labels_.count("≥ 4.9") == 2 and labels_.count("no finite ε") == 2
    points = [line for line in ax.get_lines() if line.get_marker() == "o" and len(line.get_xdata())]
    assert len(points) == (~privacy.capped).sum()  # a point only where the trials do not cap the bound
    for line in points:  # vermillion iff the point is above its row's claim
        y = int(round(line.get_ydata()[0]))
        row = privacy.iloc[len(privacy) - 1 - y]
        assert (line.get_color() == style.VIOLATES) == (row.lower > row.claim), row.test
    ticks = dict(zip((t.get_text() for t in ax.get_xticklabels()), ax.get_xticks()))
    infinite = [line for line in ax.get_lines() if line.get_marker() == ">"]
    assert len(infinite) == 2 and all(line.get_xdata()[0] == ticks["∞"] for line in infinite)


def test_the_canary_bounds_merge_equal_statistics_and_draw_the_trial_ceiling_as_a_bound():
    """audit_canary_bounds (notebooks/audit_figures.ipynb): the committed canary table, one row per method and setting
    where the final-model and every-update statistics agree; Algorithm 1's ~4.9 (no error, or one, among 500 held-out
    trials a world) is an arrow, never a point; its exact bound beyond 30 widens the axis' finite part."""
    canary, prov = provenance.read_csv(CPU / "audit_canary.csv")
    rows = headline_plot.canary_rows(canary, prov["config"]["delta"])
    assert len(rows) == canary.groupby(["method", "q", "T", "eps_lower_bound", "eps_exact_bound"], dropna=False).ngroups
    alg1 = rows[rows.method == "alg1"]
    assert alg1.capped.all() and (alg1.lower > 4.9).all() and alg1.test.str.contains(" and ").all()
    dpsgd = rows[rows.method == "dpsgd"]
    assert not dpsgd.capped.any() and (dpsgd.lower <= dpsgd.own_eps).all() and dpsgd.exact.isna().all()
    fig = headline_plot.rows_figure(rows, "canary")
    ax = fig.axes[0]
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == rows.capped.sum()
    finite_exact = [line.get_xdata()[0] for line in ax.get_lines() if line.get_marker() == "s"]
    assert max(finite_exact) == pytest.approx(rows.exact.max()) and max(finite_exact) < ax.get_xlim()[1]


def test_one_run_is_a_point_alone_and_a_mean_has_its_interval():
    cells = _cells().assign(width=1.0)
    fig, _, accuracy = headline_plot.draw_headline(cells, CPU)
    ax = fig.axes[1]
    bars = [line for line in ax.get_lines() if len(line.get_xdata()) == 2 and line.get_linewidth() == 3]
    points = [line for line in ax.get_lines() if line.get_marker() in headline_plot.MARKERS and len(line.get_xdata())]
    assert len(points) == len(accuracy) and len(bars) == int((accuracy.n >= 2).sum())
    # the axis fits what is drawn: a one-run cell's interval (the paper's spread, not drawn) does not widen it
    one = cells.assign(ci_low=cells.ci_low.where(cells.n >= 2, -40.0), ci_high=cells.ci_high.where(cells.n >= 2, 40.0))
    lo, hi = headline_plot.draw_headline(one, CPU)[0].axes[1].get_xlim()
    assert hi < 40 and -lo < 40 and hi == pytest.approx(-lo)
    assert sorted(line.get_markerfacecolor() == "white" for line in points) == sorted(accuracy.n < 2)


def _table(obj, dataset, rows):
    from workflow.report.objects import COLUMNS

    return pd.DataFrame([_row(object=obj, dataset=dataset, **r) for r in rows]).reindex(columns=COLUMNS)


def test_the_paper_cells_are_every_algorithm_1_cell_the_paper_prints_for_an_object_run_here():
    """Each object with a paper cell run here (at any width) gives every Algorithm-1 cell its table carries a printed
    value for, run or not, once each, by eps with inf last; an object with nothing run here gives none."""
    not_run = dict(origin="paper", mean=None, std=None, n=0, width=None, diff=None, ci_low=None, ci_high=None,
                   interval=None, interval_df=None, verdict=None, status="not_run",
                   why="result file missing: run the DAG")
    fashion = _table("table4_fashionmnist", "fashionmnist", [
        dict(eps=math.inf, paper=93.13, paper_std=None),
        dict(eps=0.5, paper=81.02, paper_std=5.91, **not_run),
        dict(eps=2.0), dict(eps=2.0, width=1.0, precision="bf16"),  # one cell, two widths
        dict(eps=4.0, paper=91.69, paper_std=0.14, **not_run),
        dict(eps=1.0, method="DP-SGD", paper=80.6, paper_std=0.71, **not_run),  # another method: not a cell here
        dict(eps=2.0, method="LATENT", paper=None, paper_std=None, verdict=None, status="no_paper_value"),
    ])
    cifar = _table("table1_cifar10", "cifar10", [dict(eps=1.0, paper=82.96, paper_std=1.46, **dict(
        not_run, why="not in the 'cpu' profile"))])
    cells = headline.paper_cells([cifar, fashion])
    assert list(cells.columns) == headline.PAPER_CELL_COLUMNS
    assert list(zip(cells.object, cells.eps)) == [("table4_fashionmnist", e) for e in (0.5, 2.0, 4.0, math.inf)]
    assert list(cells.paper_mean) == [81.02, 91.13, 91.69, 93.13]
    assert headline.paper_cells([cifar]).empty


def _cell(eps, mean, std, n, width=1.0, precision="bf16", obj="table4_fashionmnist",
          dataset="fashionmnist"):
    return dict(object=obj, dataset=dataset, method="Algorithm 1", eps=eps, width=width, precision=precision, n=n,
                ours_mean=mean, ours_std=std)


FASHION = ((0.5, 81.02), (1.0, 86.35), (2.0, 91.13), (4.0, 91.69), (math.inf, 93.13))  # Table 4, Algorithm 1


def _paper(obj="table4_fashionmnist", dataset="fashionmnist", values=FASHION):
    return pd.DataFrame([dict(object=obj, dataset=dataset, eps=e, paper_mean=m, paper_std=None) for e, m in values],
                        columns=headline.PAPER_CELL_COLUMNS)


def test_the_privacy_cost_is_inf_minus_eps_at_full_width_with_welch_only_where_both_sides_have_seeds():
    from scipy import stats

    cells = pd.DataFrame([
        _cell(math.inf, 93.5, 0.2, 3),
        _cell(2.0, 91.0, 0.5, 3),
        _cell(2.0, 90.0, None, 1, precision="fp32"),  # another precision of the cell: never paired with bf16
        _cell(1.0, 88.0, None, 1),
        _cell(0.5, 70.0, 1.0, 3, width=0.25, precision="fp32"),  # reduced width: not the paper's model
        _cell(4.0, 91.0, 0.3, 2, precision="fp32"),  # full width, but eps = inf ran in bf16 only
        _cell(math.inf, 99.4, 0.1, 2, obj="table2_mnist", dataset="mnist"),
    ], columns=headline.CELL_COLUMNS)
    paper = pd.concat([_paper(), _paper("table2_mnist", "mnist", ((1.0, 99.37), (math.inf, 99.51)))],
                      ignore_index=True)
    cost = headline.privacy_cost(cells, paper)
    assert list(cost.columns) == headline.PRIVACY_COST_COLUMNS
    assert list(zip(cost.dataset, cost.eps)) == [("fashionmnist", e) for e in (0.5, 1.0, 2.0, 4.0)] + [("mnist", 1.0)]
    row = cost.set_index(["dataset", "eps"])
    two = row.loc[("fashionmnist", 2.0)]
    se = math.sqrt(0.2 ** 2 / 3 + 0.5 ** 2 / 3)
    df = se ** 4 / ((0.2 ** 2 / 3) ** 2 / 2 + (0.5 ** 2 / 3) ** 2 / 2)
    half = stats.t.ppf(0.975, df) * se
    assert (two.precision, two.n_inf, two.n_eps) == ("bf16", 3, 3)
    assert two.ours_cost == pytest.approx(2.5) and two.paper_cost == pytest.approx(2.0)
    assert two["diff"] == pytest.approx(0.5)
    assert (two.ci_low, two.ci_high) == (pytest.approx(2.5 - half, abs=1e-3), pytest.approx(2.5 + half, abs=1e-3))
    assert (two.interval, two.interval_df, two.status) == ("welch", round(df, 1), "both_run")
    # what a reader sees of each row (labels.cost_status where there is no cost, labels.cost_interval)
    said = {(r.dataset, r.eps): (labels.cost_status(r), labels.cost_interval(r)) for r in cost.itertuples()}
    assert said[("fashionmnist", 2.0)][1] == f"95% CI, Welch (df = {df:.1f})"
    one = row.loc[("fashionmnist", 1.0)]  # one run at eps: the cost, no interval
    assert one.ours_cost == pytest.approx(5.5) and one["diff"] == pytest.approx(5.5 - (93.13 - 86.35))
    assert pd.isna(one.ci_low) and pd.isna(one.ci_high) and (one.interval, one.status) == ("one_run", "both_run")
    assert pd.isna(one.interval_df) and said[("fashionmnist", 1.0)][1] == "none (one run at eps = 1)"
    half_run = row.loc[("fashionmnist", 0.5)]  # run at reduced width only: no full-width run, said so
    assert pd.isna(half_run.ours_cost) and half_run.n_eps == 0 and half_run.n_inf == 3
    assert half_run.status == "not_run" and pd.isna(half_run.interval)
    assert said[("fashionmnist", 0.5)][0] == "no full-width run at eps = 0.5 yet"
    assert half_run.paper_cost == pytest.approx(93.13 - 81.02)
    mixed = row.loc[("fashionmnist", 4.0)]
    assert pd.isna(mixed.ours_cost) and mixed.status == "no_common_precision"
    assert said[("fashionmnist", 4.0)][0] == "no precision run at full width at both eps"
    mnist = row.loc[("mnist", 1.0)]
    assert pd.isna(mnist.ours_cost) and mnist.status == "not_run"
    assert said[("mnist", 1.0)][0] == "no full-width run at eps = 1 yet"
    alone = headline.privacy_cost(cells[cells.object == "table2_mnist"].iloc[0:0], paper)
    assert set(alone.status) == {"not_run"} and set(alone.n_eps) == set(alone.n_inf) == {0}
    assert {labels.cost_status(r) for r in alone.itertuples()} == {
        "no full-width run at eps = 0.5 or inf yet", "no full-width run at eps = 1 or inf yet",
        "no full-width run at eps = 2 or inf yet", "no full-width run at eps = 4 or inf yet"}
    one_inf = headline.privacy_cost(pd.DataFrame([_cell(math.inf, 93.5, None, 1), _cell(2.0, 91.0, None, 1),
                                                  _cell(4.0, 91.5, 0.3, 3)], columns=headline.CELL_COLUMNS), _paper())
    assert set(one_inf.interval.dropna()) == {"one_run"}
    said = {r.eps: labels.cost_interval(r) for r in one_inf.itertuples()}
    one_inf = one_inf.set_index("eps")
    assert said[2.0] == "none (one run at eps = 2 and inf)"
    assert said[4.0] == "none (one run at eps = inf)" and pd.isna(one_inf.loc[4.0, "ci_low"])
    assert one_inf.loc[4.0, "ours_cost"] == pytest.approx(2.0)
