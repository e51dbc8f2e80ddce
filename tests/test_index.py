"""The results index counts and names every cell that was not run, baselines included."""

import math
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from workflow.report import index

REPO = Path(__file__).resolve().parents[1]


def test_missing_baseline_cells_are_counted_and_named():
    nan = math.nan
    base = dict(q=nan, alpha=nan, lr=nan, norm="batch", precision="fp32", why=nan, interval=nan, interval_df=nan,
                verdict=nan, ci_low=nan, ci_high=nan, width=nan)
    here = dict(base, method="Algorithm 1", origin="here", status="compared", verdict="below", width=0.25, std=0.1,
                n=3, paper=99.4, paper_std=0.1, diff=-1.5, ci_low=-1.9, ci_high=-1.1, interval="welch",
                interval_df=3.5, setting="s")
    missing = dict(base, status="not_run", why="result file missing: run the DAG", mean=nan, std=nan, n=0, diff=nan,
                   setting="")
    rows = [dict(here, eps=1.0, mean=97.9), dict(here, eps=0.5, mean=97.5),
            dict(base, method="Algorithm 1", eps=math.inf, origin="here", status="no_spread", width=0.25, mean=99.0,
                 std=nan, n=1, paper=99.5, paper_std=nan, diff=-0.5, interval="no_paper_spread", setting="s"),
            dict(missing, method="DP-SGD", eps=2.0, origin="paper", paper=82.6, paper_std=0.45),
            dict(missing, method="LATENT", eps=1.0, origin="not_run", paper=nan, paper_std=nan),
            dict(base, method="DP-SGD", eps=0.5, origin="cited", status="cited", mean=nan, std=nan, n=0, paper=90.0,
                 paper_std=nan, diff=nan, setting="")]
    from workflow.report.markdown import line

    cells, lines = index._object_section("table2_mnist", pd.DataFrame(rows), "cpu")
    row, lines = line(cells), "\n".join(lines).splitlines()
    # the keys rendered through labels: the verdict with its width, the reason of each cell not run, once
    assert ("| 2 below the paper (reduced width); 1 no spread printed (reduced width); "
            "2 cells not run here (result file missing: run the DAG) |") in row
    assert "Not run here: 2 cells (result file missing: run the DAG): DP-SGD eps=2, LATENT eps=1." in lines
    assert ("| Algorithm 1 | eps=1 | 97.90 ± 0.10 | 3 | 99.40 ± 0.10 | -1.50 [-1.90, -1.10] | "
            "95% CI, Welch (df = 3.5) | below the paper (reduced width) | s |") in lines
    assert ("| Algorithm 1 | eps=inf | 99.00 | 1 | 99.50 | -0.50 | none (the paper prints no spread) | "
            "no spread printed (reduced width) | s |") in lines
    # no key reaches the page
    text = "\n".join([row, *lines])
    assert not re.search(r"\b(compared|no_spread|not_run|below_within|welch|no_paper_spread|cited)\b", text), text


def test_the_index_shows_each_block_made_from_the_profiles_own_files_and_links_it(tmp_path):
    """The numbers beyond the paper objects' cells are the README's and docs' blocks, made by the same declaration
    from this profile's files (none written as a sentence); a block whose file the profile lacks says so."""
    from dirdp import provenance
    from workflow.report.readme_campaign import width_effect
    from workflow.report.readme_sections import Sources

    folder = tmp_path / "results" / "smoke"
    folder.mkdir(parents=True)
    t = pd.DataFrame(dict(dataset="mnist", eps=[1.0, math.inf], width=[0.25, 0.25], precision="fp32", mean=[98.94, 99.1],
                          std=math.nan, n=1, seeds="0", paper_full_width=[99.37, 99.5], paper_std=[0.059, math.nan],
                          diff_to_paper=[-0.43, -0.4]))
    provenance.write_csv(t, folder / "width_effect.csv", {"notebook": "width_effect"})
    text = index.write_index(results=folder, profile="smoke").read_text()
    assert "| width_effect | [`width_effect.csv`](width_effect.csv) | shown in [width-effect](#width-effect) |" in text
    section = text[text.index("### width-effect"):]
    section = section[:section.index("\n### ", 1)]
    assert width_effect(Sources(tmp_path / "results", "smoke")) in section  # the block, row for row
    assert "From `results/smoke/width_effect.csv`." in section
    first_layer = text[text.index("### audit-first-layer"):]
    assert first_layer.split("\n")[4].startswith("Not made for this profile: ") and "audit_first_layer.csv" in first_layer
    assert "### timings" not in text  # results/timings.csv is no profile's


def _profile_folder(root, profile):
    """A results folder of ``profile`` under ``root`` holding one object's table (Table 6)."""
    from dirdp import provenance

    folder = root / "results" / profile
    folder.mkdir(parents=True)
    t6 = pd.DataFrame(dict(dataset=["cifar10"], eps=[1.0], rstar=[0.2], paper_rstar=[0.2], status=["match"]))
    provenance.write_csv(t6, folder / "table6.csv", {"notebook": "table6_table7_rstar"})
    return folder


def test_each_profile_has_its_own_index_and_the_top_index_links_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cpu = _profile_folder(tmp_path, "cpu")
    out = index.write_index(results="results/cpu", profile="cpu", out="results/cpu/README.md")
    assert out == cpu.relative_to(tmp_path) / "README.md"
    text = (cpu / "README.md").read_text()
    assert "[`table6.csv`](table6.csv)" in text  # links relative to the index, beside its CSVs
    assert "--configfile config/cpu.yaml results/cpu/table2_mnist.csv`" in text  # the command of a missing object
    assert "[`results/README.md`](../README.md)" in text
    top = (tmp_path / "results/README.md").read_text()
    assert "[`results/cpu/README.md`](cpu/README.md)" in top and "[`figures/cpu/`](../figures/cpu/)" in top
    assert "[`results/quick/README.md`]" not in top
    # another profile's index: its own folder; the cpu one is left as it was, the top index gains a row
    cpu_index = (cpu / "README.md").read_bytes()
    _profile_folder(tmp_path, "mine")
    index.write_index(results="results/mine", profile="mine", out="results/mine/README.md")
    assert (cpu / "README.md").read_bytes() == cpu_index
    top = (tmp_path / "results/README.md").read_text()
    assert "[`results/cpu/README.md`](cpu/README.md)" in top and "[`results/mine/README.md`](mine/README.md)" in top
    # a profile whose outputs git ignores (quick: scripts/main.sh without a GPU) has its own index and leaves the top
    # index as it was, not even rewritten: a clone's `git status` stays clean after running it
    top_file = tmp_path / "results/README.md"
    os.utime(top_file, (1_000_000_000, 1_000_000_000))
    before = top_file.read_bytes()
    for name in index.LOCAL_PROFILES:
        _profile_folder(tmp_path, name)
        index.write_index(results=f"results/{name}", profile=name, out=f"results/{name}/README.md")
        assert (tmp_path / f"results/{name}/README.md").exists()
    assert top_file.read_bytes() == before and top_file.stat().st_mtime == 1_000_000_000


def test_git_ignores_the_outputs_of_the_profiles_the_top_index_leaves_out():
    if subprocess.run(["git", "rev-parse"], cwd=REPO, capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")

    def ignored(path: str) -> bool:
        return subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=REPO).returncode == 0

    for name in index.LOCAL_PROFILES:
        for path in (f"results/{name}/README.md", f"results/{name}/notebooks/table2_mnist.ipynb",
                     f"results/runs/{name}/mnist/alg1_eps1_seed0.json", f"results/logs/{name}/index.log",
                     f"figures/{name}/headline.png"):
            assert ignored(path), path
    for path in ("results/README.md", "results/cpu/README.md", "results/runs/cpu/mnist/alg1_eps1_seed0.json",
                 "results/logs/cpu/index.log", "figures/cpu/headline.png", "results/runs/gpu/mnist/alg1_eps1_seed0.json"):
        assert not ignored(path), path


def test_the_cli_defaults_index_the_profile_folder_and_keep_the_top_index(tmp_path, monkeypatch):
    # `python -m workflow index --profile cpu` passes --results results and no --out (as its --help says: the profile's
    # own index); --out results/README.md, the default of earlier commits, means the same
    from workflow.cli import parse

    assert parse(["index", "--profile", "cpu"]).out is None
    monkeypatch.chdir(tmp_path)
    cpu = _profile_folder(tmp_path, "cpu")
    for out in (None, "results/README.md"):
        out = index.write_index(results="results", profile="cpu", out=out)
        assert out.resolve() == (cpu / "README.md").resolve()
    assert "## Objects" in (cpu / "README.md").read_text()
    assert (tmp_path / "results/README.md").read_text().startswith("# Results\n")


def test_every_link_of_the_committed_indexes_resolves():
    root = Path(__file__).resolve().parents[1]
    text = (root / "results/cpu/README.md").read_text()
    assert "../../figures/cpu/width_effect.png" in text
    for link in re.findall(r"\]\(([^)#]+)\)", text):
        assert (root / "results/cpu" / link).exists(), link
    top = (root / "results/README.md").read_text()
    assert "[`results/cpu/README.md`](cpu/README.md)" in top
    for link in re.findall(r"\]\(([^)#]+)\)", top):
        assert (root / "results" / link).exists(), link


def _run_json(path, git_commit, **dirty):
    """A minimal result JSON of one run whose provenance records ``git_commit`` (and ``dirty``'s fields)."""
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    prov = dict(config=dict(lr=0.1, optimizer="sgd", train_subset=None), device="cpu", git_commit=git_commit, **dirty)
    path.write_text(json.dumps(dict(dataset="mnist", method="alg1", eps_target=1.0, seed=0, q=0.1, alpha=3.0, steps=10,
                                    width=0.25, width_label="reduced width (0.25x channels)", rstar=0.2, epsilon=1.0,
                                    test_accuracy=90.0, wall_time_s=60.0, provenance=prov)))


def test_results_of_uncommitted_code_are_flagged(tmp_path, monkeypatch):
    from dirdp import provenance
    from workflow.report import runs

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    mnist = tmp_path / "results/runs/cpu/mnist"
    _run_json(mnist / "alg1_eps1_seed0.json", "abc")
    _run_json(mnist / "alg1_eps2_seed0.json", "bea48a2+dirty")  # made before the dirty files were recorded
    _run_json(mnist / "alg1_epsinf_seed0.json", "def+dirty", dirty_files=["dirdp/loop.py"], dirty_diff_sha256="f" * 64)
    t6 = pd.DataFrame(dict(dataset=["cifar10"], eps=[1.0], rstar=[0.2], paper_rstar=[0.2], status=["match"]))
    provenance.write_csv(t6, folder / "table6.csv", {"config": {"runs": ["results/runs/cpu/mnist/alg1_eps2_seed0.json"]},
                                                     "git_commit": "abc"})
    provenance.write_csv(t6, folder / "extra.csv", {"config": {}, "git_commit": "ghi+dirty"})
    text = index.write_index(results="results/cpu", profile="cpu", out="results/cpu/README.md").read_text()
    (t6_row,) = [r for r in text.splitlines() if r.startswith("| table6 |")]
    assert "**+dirty**: made with uncommitted code" in t6_row
    section = text.split("## Uncommitted code")[1]
    assert ("| [`results/runs/cpu/mnist/alg1_eps2_seed0.json`](../runs/cpu/mnist/alg1_eps2_seed0.json) | "
            "`bea48a2+dirty` | not recorded | not recorded | `table6.csv` |") in section
    assert f"| `def+dirty` | `dirdp/loop.py` | `{'f' * 64}` | - |" in section
    assert "| [`results/cpu/extra.csv`](extra.csv) | `ghi+dirty` | not recorded | not recorded | - |" in section
    assert "alg1_eps1_seed0" not in section
    summary = runs.collect("results/runs/cpu")  # the runs summary says so too
    assert summary.dirty.tolist() == [False, True, True]
    assert summary.dirty_files.tolist()[1:] == ["not recorded", "dirdp/loop.py"]
    assert summary.dirty_diff_sha256.tolist()[1:] == ["not recorded", "f" * 64]
