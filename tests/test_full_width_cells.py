"""Every cell of Tables 2 and 4 run at the paper's width reaches the report as soon as its run exists: the object's
table, the headline cells, the README's findings (a cell not run yet is a row that says so) and the width figure's
rows, also at an eps no run had before at any width (0.5, 4) and at eps = inf. The runs are synthetic: copies of
committed full-width result files with their eps changed."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from dirdp import provenance
from dirdp.run_result import read_run
from workflow import paper
from workflow.experiments import Profile, get_object
from workflow.report import headline, labels, object_table, profile_run_paths, readme, width

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "results" / "runs" / "cpu"


def _as_eps(src: Path, dst: Path, eps: float, accuracy: float, dataset: str | None = None) -> None:
    """``src`` (a result JSON) written to ``dst`` as a run at ``eps`` (and of ``dataset``) with ``accuracy``, its
    seed the one ``dst`` names."""
    rec = json.loads(src.read_text())
    rec["seed"] = rec["provenance"]["config"]["seed"] = int(dst.stem.rsplit("seed", 1)[1])
    word = "inf" if math.isinf(eps) else eps
    rec.update(eps_target=word, epsilon=word, test_accuracy=accuracy, rstar=None if math.isinf(eps) else rec["rstar"])
    rec["provenance"]["config"]["eps"] = word
    if dataset:
        rec["dataset"] = rec["provenance"]["config"]["dataset"] = dataset
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(rec))


@pytest.fixture
def runs_root(tmp_path) -> Path:
    """FashionMNIST at full width (bf16) at eps 0.5, 4 and inf, and at 0.25x at eps 1; MNIST at full width at inf."""
    root = tmp_path / "runs"
    fashion, mnist = root / "cpu" / "fashionmnist", root / "cpu" / "mnist"
    full = RUNS / "fashionmnist" / "alg1_w1_bf16_eps2_seed0.json"
    _as_eps(full, fashion / "alg1_w1_bf16_eps0.5_seed0.json", 0.5, 80.5)
    _as_eps(full, fashion / "alg1_w1_bf16_eps4_seed0.json", 4.0, 91.5)
    _as_eps(full, fashion / "alg1_w1_bf16_eps4_seed1.json", 4.0, 91.9)
    shutil.copy(RUNS / "fashionmnist" / "alg1_w1_bf16_epsinf_seed0.json", fashion)
    shutil.copy(RUNS / "fashionmnist" / "alg1_eps1_seed0.json", fashion)
    _as_eps(RUNS / "mnist" / "alg1_w1_bf16_eps1_seed0.json", mnist / "alg1_w1_bf16_epsinf_seed0.json", math.inf, 99.5)
    return root


def test_a_full_width_run_at_a_new_eps_reaches_its_table_the_headline_cells_and_the_width_rows(runs_root):
    prof = Profile.load(REPO / "config" / "cpu.yaml")
    tables = {name: object_table(get_object(name), prof, runs_root=str(runs_root))
              for name in ("table2_mnist", "table4_fashionmnist")}
    t4 = tables["table4_fashionmnist"]
    full = t4[(t4.origin == "here") & (t4.width == 1.0) & (t4.method == "Algorithm 1")]
    assert sorted(zip(full.eps, full.n)) == [(0.5, 1), (4.0, 2), (math.inf, 1)]
    assert full.set_index("eps").loc[4.0, "mean"] == pytest.approx(91.7)
    t2 = tables["table2_mnist"]
    assert list(t2[(t2.origin == "here") & (t2.width == 1.0) & (t2.method == "Algorithm 1")].eps) == [math.inf]

    cells = headline.headline_cells(list(tables.values()))
    at_full = cells[headline.full_width(cells)]
    assert sorted(zip(at_full.object, at_full.eps)) == [("table2_mnist", math.inf), ("table4_fashionmnist", 0.5),
                                                        ("table4_fashionmnist", 4.0), ("table4_fashionmnist", math.inf)]
    cost = headline.privacy_cost(cells, headline.paper_cells(list(tables.values())))
    said = {(r.dataset, r.eps): labels.cost_interval(r) for r in cost.itertuples()}
    cost = cost.set_index(["dataset", "eps"])
    assert cost.loc[("fashionmnist", 4.0), "ours_cost"] == pytest.approx(93.51 - 91.7)
    assert cost.loc[("fashionmnist", 4.0), ["interval", "status"]].tolist() == ["one_run", "both_run"]
    assert said[("fashionmnist", 4.0)] == "none (one run at eps = inf)"

    frames, printed = [], []
    for dataset, (name, budgets) in width.PANELS.items():
        found = [p for p in profile_run_paths(get_object(name), prof, str(runs_root)) if Path(p).exists()]
        frames.append(width.shown_runs(pd.DataFrame([read_run(p) for p in found]), budgets).assign(dataset=dataset))
        printed.append(paper.accuracy(name))
    rows = width.summary(pd.concat(frames, ignore_index=True), pd.concat(printed, ignore_index=True))
    assert list(rows.columns) == width.COLUMNS
    # every full-width cell, and eps = 1 at 0.25x not (neither a panel's budget nor run at full width)
    assert sorted(zip(rows.dataset, rows.eps, rows.width)) == [
        ("fashionmnist", 0.5, 1.0), ("fashionmnist", 4.0, 1.0), ("fashionmnist", math.inf, 1.0),
        ("mnist", math.inf, 1.0)]
    four = rows[rows.eps == 4.0].iloc[0]
    assert (four.n, four.seeds, four.paper_full_width, four.paper_std) == (2, "0 1", 91.69, 0.14)
    assert four.diff_to_paper == pytest.approx(91.7 - 91.69, abs=1e-3)


def test_the_findings_lead_with_every_full_width_cell_and_say_which_are_not_run_yet(runs_root, tmp_path):
    """Ten rows of Algorithm 1 at 1x (Tables 2 and 4, eps 0.5, 1, 2, 4, inf), each run cell with its n and each other
    one "not run yet"; the reduced-width row is on the docs page's block, not in the README's."""
    prof = Profile.load(REPO / "config" / "cpu.yaml")
    results = tmp_path / "results"
    (results / "cpu").mkdir(parents=True)
    tables = []
    for name in ("table2_mnist", "table4_fashionmnist"):
        tables.append(object_table(get_object(name), prof, runs_root=str(runs_root)))
        provenance.write_csv(tables[-1], results / "cpu" / f"{name}.csv", {"test": "synthetic runs"})
    provenance.write_csv(headline.headline_cells(tables), results / "cpu" / "headline_cells.csv", {"test": "synthetic"})
    made = readme.render(results, "cpu", {"findings", "findings-reduced-width"})
    rows = [ln for ln in made["findings"][1].splitlines() if ln.startswith("| Table")]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in rows]
    assert [(c[0], c[3], c[4]) for c in cells] == [(t, e, "1x" if missing else "1x, bf16") for t, e, missing in [
        ("Table 2", "0.5", 1), ("Table 2", "1", 1), ("Table 2", "2", 1), ("Table 2", "4", 1), ("Table 2", "inf", 0),
        ("Table 4", "0.5", 0), ("Table 4", "1", 1), ("Table 4", "2", 1), ("Table 4", "4", 0), ("Table 4", "inf", 0)]]
    assert [c[5] for c in cells] == ["not run yet"] * 4 + ["99.50 (n = 1)", "80.50 (n = 1)", "not run yet",
                                                           "not run yet", "91.70 ± 0.28 (n = 2)", "93.51 (n = 1)"]
    assert all(c[-1] == "—" and c[7] == "—" for c in cells if c[5] == "not run yet")
    assert "| Table 2 | MNIST | Algorithm 1 | 0.5 | 1x | not run yet | 99.28 ± 0.07 (n = 5) | — | — | — |" in rows
    assert "0.25x" not in made["findings"][1]
    # the CSV's keys (interval, verdict) rendered through labels, as the README printed them before they were keys
    assert [(c[8], c[9]) for c in cells if c[5] != "not run yet"] == [
        ("none (the paper prints no spread)", "—"),
        ("95% prediction interval (n = 1, the paper's spread)", "no verdict (n = 1)"),
        ("95% CI, Welch (df = 1.2)", "undecided (n = 2)"), ("none (the paper prints no spread)", "—")]
    reduced = [ln for ln in made["findings-reduced-width"][1].splitlines() if ln.startswith("| Table")]
    assert len(reduced) == 1 and "| Table 4 | FashionMNIST | Algorithm 1 | 1 | 0.25x |" in reduced[0]
