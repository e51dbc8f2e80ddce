"""Figures a person can read (issue 35): the accuracy panels keep their legend outside the data, draw every run made
here solid and the paper's values dashed, and hide no point behind another; Table 9 keeps q and Figure 2 alpha and
the learning rate in the index; the index links every figure of its profile."""

import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from dirdp import provenance
from workflow import report
from workflow.experiments import Profile, get_object
from workflow.report import index
from workflow.report.markdown import line

matplotlib.use("Agg")
REPO = Path(__file__).resolve().parents[1]


def _points(ax):
    """Display coordinates of every marker drawn in data coordinates (the paper's lines have none)."""
    out = []
    for line in ax.get_lines():
        if line.get_marker() not in ("o", "s", "^", "D") or line.get_transform() != ax.transData:
            continue  # the paper's lines (no marker), the error bars' caps
        xy = np.column_stack([np.asarray(v, dtype=float) for v in line.get_data()])
        out += [tuple(p) for p in ax.transData.transform(xy[np.isfinite(xy).all(axis=1)])]
    return out


@pytest.mark.parametrize("name", ["table2_mnist", "table4_fashionmnist"])
def test_the_committed_accuracy_panels_hide_no_point(name):
    table, _ = provenance.read_csv(REPO / "results" / "cpu" / f"{name}.csv")
    fig = report.figure(get_object(name), table)
    fig.canvas.draw()
    ax = fig.axes[0]
    box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    points = _points(ax)
    assert points and not [p for p in points if box.contains(*p)]  # the legend covers no point:
    assert not box.overlaps(ax.get_window_extent())  # it lies outside the axes
    markers = [(round(x), round(y)) for x, y in points]
    assert len(set(markers)) == len(markers)  # no two markers on the same pixel
    for line in ax.get_lines():
        label = line.get_label()
        if "(run here" in label:
            assert line.get_linestyle() == "-", label  # runs made here: solid
        elif label.endswith("(paper)"):
            assert line.get_linestyle() == "--" and line.get_marker() in ("None", None, ""), label


def test_table9_keeps_q_and_figure2_shows_alpha_and_the_learning_rate(tmp_path):
    prof = Profile.load(REPO / "config" / "cpu.yaml")
    t9 = report.object_table(get_object("table9_sampling_rate"), prof, runs_root=str(tmp_path))
    _, lines = index._object_section("table9_sampling_rate", t9, "cpu")
    text = "\n".join(lines)
    for q in ("0.001", "0.01", "0.02", "0.04"):
        assert f"Algorithm 1 eps=4 q={q}" in text
    fig2 = report.object_table(get_object("fig2_learning_rate_vs_alpha"), prof, runs_root=str(tmp_path))
    cells = fig2[fig2.origin != "cited"]
    assert len(cells) == 105 and cells.alpha.notna().all() and cells.lr.notna().all() and (cells.eps == 1.0).all()
    cells_, lines = index._object_section("fig2_learning_rate_vs_alpha", fig2, "cpu")
    row = line(cells_)
    text = "\n".join(lines)
    assert "eps=nan" not in text and "105 cells" in row
    assert "Algorithm 1 eps=1 alpha=0.1 lr=0.01/0.025/0.05/0.075/0.1/0.2/0.3/0.4/0.5/0.75/1, Algorithm 1" in text


def test_the_index_lists_every_figure_with_the_notebook_that_draws_it(tmp_path):
    figures = tmp_path / "figures" / "p"
    figures.mkdir(parents=True)
    for name in ("width_effect.png", "width_effect.pdf", "fig3a_fashionmnist.png", "headline.png", "stray.png"):
        (figures / name).write_bytes(b"")
    lines = "\n".join(index.figure_lines(figures, "../../figures/p", REPO / "notebooks")).splitlines()
    rows = [r for r in lines if r.startswith("| [")]
    assert [re.match(r"\| \[`([^`]+)`\]", r).group(1) for r in rows] == [
        "headline.png", "fig3a_fashionmnist.png", "stray.png", "width_effect.png"]
    assert "[`width_effect.pdf`](../../figures/p/width_effect.pdf)" in rows[3]
    assert "`notebooks/table4_fashionmnist.ipynb`: Table 4 and Figure 3a" in rows[1]
    assert "`notebooks/headline.ipynb`" in rows[0] and rows[2].endswith("| — | — |")


def test_the_committed_index_links_every_figure_of_its_profile():
    text = (REPO / "results" / "cpu" / "README.md").read_text()
    pngs = sorted(p.name for p in (REPO / "figures" / "cpu").glob("*.png"))
    assert "headline.png" in pngs
    missing = [name for name in pngs if f"](../../figures/cpu/{name})" not in text]
    assert not missing, f"results/cpu/README.md does not link {missing}"


def test_the_training_curves_are_one_line_per_cell_with_a_label_in_words():
    from workflow.report import runs

    curves = runs.curves(REPO / "results" / "runs" / "cpu" / "mnist")
    cells = runs.curve_cells(curves)
    keys = cells.drop_duplicates(runs.CELL)
    # three seeds of one cell are one line; every run is in exactly one
    assert len(keys) < curves.run.nunique()
    assert keys.seeds.str.split().str.len().sum() == curves.run.nunique()
    three = keys[(keys.method == "alg1") & (keys.eps == 1.0) & (keys.width == 0.25) & (keys.precision == "fp32")
                 & (keys.norm == "batch")]
    assert list(three.seeds) == ["0 1 2"]
    c = cells[(cells[runs.CELL] == three[runs.CELL].iloc[0]).all(axis=1)]
    assert (c.lo <= c["mean"]).all() and (c["mean"] <= c.hi).all() and (c.n == 3).all()
    assert c["final"].iloc[0] == c.sort_values("step")["mean"].iloc[-1]
    labels = {runs.cell_label(r.method, r.eps, r.width, r.norm, r.precision, r.reduced) for r in keys.itertuples()}
    assert {"Alg. 1, ε = 1, 1x, bf16", "Alg. 1, ε = 1, 0.25x, GroupNorm", "Alg. 1, ε = inf, 0.25x",
            "LATENT, ε = 0.5", "Tempered sigmoid DP-SGD, ε = 2"} <= labels
    assert not [label for label in labels if "_" in label or "seed" in label]  # no file tags
    assert runs.cell_label("alg1", 2.0, 0.5, "batch", "fp32", "", method_shown=False) == "ε = 2, 0.5x"
    assert runs.curve_cells(curves[:0]).empty


def test_the_baselines_panel_dodges_each_methods_lines_and_leaves_a_lone_line_at_its_eps():
    table, _ = provenance.read_csv(REPO / "results" / "cpu" / "baselines_comparison.csv")
    table = table[table.object == "table2_mnist"]
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    report.draw_accuracy(ax, get_object("table2_mnist"), table, dodge=1.12, dodge_within_method=True)
    fig.canvas.draw()
    by_label = {c.get_label(): np.asarray(c.lines[0].get_xdata(), dtype=float) for c in ax.containers}  # ours
    latent = next(x for label, x in by_label.items() if label.startswith("LATENT (run here"))
    assert np.allclose(latent, [0.5, 1.0, 2.0])  # one line: at its own eps
    alg1 = [x for label, x in by_label.items() if label.startswith("Algorithm 1 (run here")]
    at_one = sorted(float(x[np.argmin(abs(np.log(x)))]) for x in alg1)
    assert len(at_one) == 4 and all(b / a > 1.1 for a, b in zip(at_one, at_one[1:]))  # four lines, 12% apart
    points = _points(ax)
    markers = [(round(x / 8), round(y / 8)) for x, y in points]  # 8-pixel cells: no two markers in one
    assert len(set(markers)) == len(markers)
    plt.close(fig)
