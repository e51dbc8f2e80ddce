"""The results index counts and names every cell that was not run, baselines included."""

import math

import pandas as pd

from dirdp import index


def test_missing_baseline_cells_are_counted_and_named():
    nan = math.nan
    rows = [dict(method="Algorithm 1", eps=1.0, label="run here", status="differs (reduced width)", mean=99.0, std=nan,
                 n=1, paper=99.4, paper_std=0.1, diff=-0.4, q=nan, alpha=nan, lr=nan, setting="s"),
            dict(method="DP-SGD", eps=2.0, label="paper", status="not run here (result file missing: run the DAG)",
                 mean=nan, std=nan, n=0, paper=82.6, paper_std=0.45, diff=nan, q=nan, alpha=nan, lr=nan, setting=""),
            dict(method="LATENT", eps=1.0, label="not run", status="not run here (result file missing: run the DAG)",
                 mean=nan, std=nan, n=0, paper=nan, paper_std=nan, diff=nan, q=nan, alpha=nan, lr=nan, setting=""),
            dict(method="DP-SGD", eps=0.5, label="paper, cited", status="cited by the paper; not run here",
                 mean=nan, std=nan, n=0, paper=90.0, paper_std=nan, diff=nan, q=nan, alpha=nan, lr=nan, setting="")]
    row, lines = index._object_section("table2_mnist", pd.DataFrame(rows), "cpu")
    assert "1 differs (reduced width); 2 cells not run here (result file missing: run the DAG)" in row
    assert "Not run here: 2 cells (result file missing: run the DAG): DP-SGD eps=2, LATENT eps=1." in lines


def test_the_width_effect_row_gives_every_width_with_its_n(tmp_path):
    from dirdp import provenance

    t = pd.DataFrame(dict(eps=[2.0, 2.0, math.inf], width=[0.5, 0.25, 0.25], mean=[88.1, 85.4, 91.54],
                          std=[nan := math.nan, 0.4, nan], n=[1, 3, 1], seeds=["0", "0 1 2", "0"],
                          paper_full_width=[91.13, 91.13, 93.13], paper_std=[0.18, 0.18, nan], diff_to_paper=[0, 0, 0]))
    provenance.write_csv(t, tmp_path / "width_effect.csv", {"notebook": "width_effect"})
    (row,) = [r for r in index._fixed_rows(tmp_path, "cpu") if r.startswith("| Width effect")]
    assert ("eps=2: 0.25x 85.40 (n=3, paper full width 91.13), 0.5x 88.10 (n=1, paper full width 91.13); "
            "eps=inf: 0.25x 91.54 (n=1, paper full width 93.13)") in row
