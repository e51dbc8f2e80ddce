"""The headline figure's two tables and its drawing (issue 35): the cells are the objects' own rows (paper model and
protocol, a printed value), the audit points take the claim for each row's own adjacency where the CSV has it and
leave out rows with no finite claim, and the figure keeps every point inside its axes and every legend outside."""

import math
import shutil
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from dirdp import provenance
from dirdp.report import headline, headline_plot

matplotlib.use("Agg")
REPO = Path(__file__).resolve().parents[1]
CPU = REPO / "results" / "cpu"


def _row(**kw):
    base = dict(object="table4_fashionmnist", dataset="fashionmnist", method="Algorithm 1", label="run here", eps=2.0,
                width=0.25, norm="batch", precision="fp32", mean=86.69, std=2.81, n=3, paper=91.13, paper_std=0.18,
                diff=-4.44, ci_low=-11.396, ci_high=2.516, interval="Welch (df = 2.0)", verdict="undecided (n = 3)",
                status="undecided (n = 3) (reduced width)")
    return dict(base, **kw)


def test_the_cells_are_the_paper_cells_run_here_with_the_tables_own_estimate():
    table = pd.DataFrame([
        _row(),
        _row(width=1.0, precision="bf16", mean=91.0, std=0.2, n=5, diff=-0.13, ci_low=-0.408, ci_high=0.148,
             verdict="within 1 point of the paper", status="within 1 point of the paper"),
        _row(norm="group", status="undecided (n = 3) (reduced width) (GroupNorm, not the paper's model)"),
        _row(method="LATENT", paper=None, paper_std=None, diff=None, verdict=None,
             status="no value printed in the paper"),
        _row(status="not comparable (reduced protocol)", verdict=None, ci_low=None, ci_high=None),
        _row(label="paper", mean=None, n=0, status="not run here (not in the 'cpu' profile's grid)"),
    ])
    cells = headline.headline_cells([table])
    assert list(cells.columns) == headline.CELL_COLUMNS
    assert list(zip(cells.width, cells.precision)) == [(0.25, "fp32"), (1.0, "bf16")]
    first = cells.iloc[0]
    assert (first.ours_mean, first.paper_mean, first.paper_n, first.ci_low, first.verdict) == \
        (86.69, 91.13, 5, -11.396, "undecided (n = 3)")


def _with_matched_claims(tmp_path: Path) -> Path:
    """The committed audit CSVs, audit_subspace.csv given issue 34's columns: the claim for the row's own adjacency
    (none for Algorithm 1's add/remove at q = 1; twice the add/remove claim for replace-one at q < 1) and a final-model
    twin of every row."""
    for name in ("audit_canary.csv", "audit_batchnorm.csv"):
        shutil.copy(CPU / name, tmp_path / name)
    t, prov = provenance.read_csv(CPU / "audit_subspace.csv")
    alg1_q1 = (t.method == "alg1") & (t.q >= 1)
    t["matched_claim_eps"] = t.claimed_eps.where(t.adjacency == "add", 2 * t.claimed_eps).where(
        ~alg1_q1, t.claimed_eps.where(t.adjacency == "replace", math.inf))
    t["adversary_sees"] = "every update"
    final = t.assign(adversary_sees="final model", eps_lower_bound=t.eps_lower_bound / 2)
    provenance.write_csv(pd.concat([t, final], ignore_index=True), tmp_path / "audit_subspace.csv", prov)
    return tmp_path


def test_the_audit_points_of_the_committed_csvs():
    audit = headline.audit_points(CPU)
    assert list(audit.columns) == headline.AUDIT_COLUMNS and set(audit.audit) == {"canary", "subspace", "batchnorm"}
    canary = audit[(audit.audit == "canary") & (audit.method == "alg1")]
    assert set(canary.adversary_sees) == {"final model", "every update"}  # the two statistics, told apart
    assert (canary.claimed_eps == 1.0).all() and (canary.eps_lower_bound > 4.9).all()
    assert canary.eps_exact_bound.notna().all()  # Algorithm 1's never-sampled bound
    sub = audit[audit.audit == "subspace"]
    assert sub[sub.method == "dpsgd"].eps_exact_bound.isna().all()  # a bound on the test, not on DP-SGD
    # each adjacency faces its own claim (issue 34): q = 1 add/remove has none and is left out; replace-one at q < 1
    # faces the group-privacy conversion, twice the add/remove epsilon
    assert not ((sub.q >= 1) & (sub.adjacency == "add") & (sub.method == "alg1")).any()
    pair = sub[(sub.method == "alg1") & (sub["T"] == 1000) & (sub.adversary_sees == "every update")].set_index("adjacency")
    assert abs(pair.claimed_eps["replace"] - 2 * pair.claimed_eps["add"]) < 1e-9


def test_the_audit_points_use_the_claim_for_the_rows_own_adjacency(tmp_path):
    audit = headline.audit_points(_with_matched_claims(tmp_path))
    sub = audit[audit.audit == "subspace"]
    assert math.isfinite(sub.claimed_eps.max())
    alg1_q1 = sub[(sub.method == "alg1") & (sub.q >= 1)]
    assert set(alg1_q1.adjacency) == {"replace"}  # add/remove at q = 1: no finite claim, left out
    q_small = sub[(sub.q < 1) & (sub.model == "papernot_cnn w=1") & (sub.adversary_sees == "every update")]
    claims = dict(zip(q_small.adjacency, q_small.claimed_eps))
    assert claims["replace"] == pytest.approx(2 * claims["add"])
    assert set(sub.adversary_sees) == {"every update", "final model"}


def _points_inside(ax) -> bool:
    """Every point drawn in data coordinates lies within the axes' limits (up to round-off)."""
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    ex, ey = 1e-9 * (x1 - x0), 1e-9 * (y1 - y0)
    for line in ax.get_lines():
        if line.get_transform() != ax.transData:  # axvline: axes coordinates in y
            continue
        for x, y in zip(*(pd.to_numeric(pd.Series(v), errors="coerce") for v in line.get_data())):
            if not (x0 - ex <= x <= x1 + ex and y0 - ey <= y <= y1 + ey):
                return False
    return True


def test_the_figure_keeps_points_in_their_axes_and_legends_outside(tmp_path):
    from dirdp.report.objects import COLUMNS

    cells = headline.headline_cells([pd.DataFrame([_row(), _row(eps=1.0, width=0.5, n=1, std=None, ci_low=-13.1,
                                                                 ci_high=10.0, verdict="undecided (n = 1)")])
                                     .reindex(columns=COLUMNS)])
    audit = headline.audit_points(_with_matched_claims(tmp_path))
    fig = headline_plot.draw_headline(cells, audit, title="test")
    fig.canvas.draw()
    left, right = fig.axes[:2]
    assert _points_inside(left) and _points_inside(right)
    labels = [t.get_text() for t in left.get_yticklabels()]
    assert labels == ["FashionMNIST ε=2, 0.25x", "FashionMNIST ε=1, 0.5x"]
    assert any("(replace)" in t.get_text() for t in right.get_yticklabels())
    renderer = fig.canvas.get_renderer()
    for legend in fig.legends:
        box = legend.get_window_extent(renderer)
        assert not any(box.overlaps(ax.get_window_extent(renderer)) for ax in (left, right))
    empty = headline_plot.draw_headline(headline.headline_cells([]), headline.audit_points(tmp_path / "none"))
    assert [t.get_text() for t in empty.axes[0].texts] == ["no paper cell run here yet"]
