"""The README's result numbers come from the result files (issue 16, part 2).

Every number the README states about a result is in a generated block (``python -m dirdp readme``); these tests
check that each block equals what the committed files of the cpu profile give, that a block really follows its
file, and that the README's results sections state no number by hand outside the blocks.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dirdp.report import readme

REPO = Path(__file__).resolve().parents[1]

# The README's results sections: from the first marker to the second (exclusive).
RESULT_SECTIONS = [("### Findings so far", "## One GPU: Tables 2 and 4"),
                   ("**What we measured**", "**What does hold.**"),
                   ("- **LATENT** (Chamikara et al.", "## What the privacy guarantee covers")]
# Numbers the prose of those sections may state: names (Theorem 10, Eq. (1), Table 7, Figure 2, CPU cores, 3-hour
# sessions), protocol settings (eps = 0.5, 1, 2; alpha = 7; 10-bit codes; 7x7 pooling; 784 inputs) and one cited
# claim (LATENT's 95-96% on MNIST, from its paper). A result number must go into a generated block instead.
ALLOWED = {"0.5", "1", "2", "3", "7", "10", "95-96%", "1e-3"}


def _copy_results(tmp_path: Path) -> Path:
    """The cpu profile's result files without the model weights (the blocks never read those)."""
    dst = tmp_path / "results"
    shutil.copytree(REPO / "results" / "cpu", dst / "cpu")
    shutil.copytree(REPO / "results" / "runs" / "cpu", dst / "runs" / "cpu", ignore=shutil.ignore_patterns("*.pt"))
    return dst


def test_every_generated_block_equals_what_its_files_give():
    changed = readme.update(REPO / "README.md", REPO / "results", "cpu", check=True)
    assert changed == [], (f"README blocks {changed} differ from the result files; run `python -m dirdp readme`:\n"
                           + readme.diff(REPO / "README.md", REPO / "results", "cpu"))


def test_the_readme_has_the_blocks_the_results_need():
    have = readme.blocks((REPO / "README.md").read_text())
    assert {"table7", "runs-alg1", "baselines", "bench", "audit-canary", "audit-membership",
            "audit-reconstruction", "latent-exact", "dpsgd-inception", "audit-subspace", "audit-batchnorm",
            "audit-membership-learned", "table7-high-orders"} <= set(have)
    assert all(body.strip() for body in have.values())


def test_a_block_follows_its_file(tmp_path):
    results = _copy_results(tmp_path)
    path = results / "cpu" / "audit_membership.csv"
    text = path.read_text().replace("0.515421", "0.987654")
    assert text != path.read_text()
    path.write_text(text)
    made = readme.render(results, "cpu")
    assert "AUC 0.988" in made["audit-membership"][1]
    copy = tmp_path / "README.md"
    shutil.copy(REPO / "README.md", copy)
    assert readme.update(copy, results, "cpu", check=True) == ["audit-membership"]
    assert readme.update(copy, results, "cpu") == ["audit-membership"]
    assert "AUC 0.988" in copy.read_text() and readme.update(copy, results, "cpu", check=True) == []


def test_the_audit_blocks_follow_their_files(tmp_path):
    from dirdp.provenance import read_csv, write_csv

    results = _copy_results(tmp_path)
    for name, column, block in (("audit_subspace", "eps_lower_bound", "audit-subspace"),
                                ("audit_batchnorm", "value", "audit-batchnorm"),
                                ("table7_high_orders", "first_order_certifying", "table7-high-orders")):
        before = readme.render(results, "cpu")[block][1]
        table, prov = read_csv(results / "cpu" / f"{name}.csv")
        table[column] = table[column] * 3 + 7  # every value of the column moves
        write_csv(table, results / "cpu" / f"{name}.csv", prov)
        assert readme.render(results, "cpu")[block][1] != before, block


def test_check_names_the_drifted_block_and_exits_1(tmp_path):
    copy = tmp_path / "README.md"
    text = (REPO / "README.md").read_text()
    body = readme.blocks(text)["audit-canary"]
    copy.write_text(text.replace(body, body.replace("4.91", "4.97", 1)))
    proc = subprocess.run([sys.executable, "-m", "dirdp", "readme", "--check", "--readme", str(copy),
                           "--results", str(REPO / "results")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 1
    assert "['audit-canary']" in proc.stderr and "-" in proc.stderr and "4.97" in proc.stderr


@pytest.mark.parametrize("args, says", [
    (["--results", "/nonexistent/results"], "/nonexistent/results/cpu: no such results folder"),
    (["--readme", "/nonexistent/README.md"], "/nonexistent/README.md: no such file"),
])
def test_bad_input_is_one_line_and_exit_2(args, says):
    proc = subprocess.run([sys.executable, "-m", "dirdp", "readme", "--check", *args], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and says in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_an_unclosed_block_is_an_error(tmp_path):
    with pytest.raises(readme.ReadmeError, match="no matching"):
        readme.blocks("<!-- generated: x (python -m dirdp readme; from f) -->\nbody\n")


def _prose_numbers(text: str) -> list[str]:
    text = readme.BLOCK.sub("", text)
    text = re.sub(r"`[^`]*`", "", text)                     # code: file names, commands, field names
    text = re.sub(r"\]\([^)]*\)", "]", text)               # link targets
    text = re.sub(r"\b[A-Za-z]+\d+\w*", "", text)          # names such as CIFAR10, r*, h(r)'s ...
    return re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e-?\d+)?(?:-\d+)?%?", text)


def test_no_result_number_is_typed_by_hand_in_the_results_sections():
    text = (REPO / "README.md").read_text()
    stray = []
    for start, end in RESULT_SECTIONS:
        section = text[text.index(start):text.index(end, text.index(start))]
        stray += [n for n in _prose_numbers(section) if n not in ALLOWED]
    assert stray == [], (f"numbers typed by hand in the README's results sections: {stray}; put them in a generated "
                         "block (dirdp/report/readme_sections.py) or, for a protocol setting, in ALLOWED with a reason")


def test_the_number_check_catches_a_hand_typed_number():
    assert _prose_numbers("accuracy 85.30 and AUC 0.532 (`results/cpu/x.csv`, Table 7)") == ["85.30", "0.532", "7"]


def test_the_width_reading_tests_only_what_the_seeds_allow():
    from dirdp.report.readme_campaign import width_reading
    one_each = width_reading(2.0, (0.25, [85.3]), (0.5, [90.4]))
    assert "no spread to compare with" in one_each and "+5.10" in one_each
    inside = width_reading(2.0, (0.25, [84.85, 85.30, 89.93]), (0.5, [88.0]))
    assert "lies inside that width's range" in inside and "cannot tell a width effect" in inside
    outside = width_reading(2.0, (0.25, [84.85, 85.30, 89.93]), (0.5, [90.40]))
    assert "lies outside" in outside and "(n = 3)" in outside and "(n = 1)" in outside
    # 90.40 - mean(84.85, 85.30, 89.93) = 3.71, over their std 2.81
    assert "1.32 times the seed std (2.81)" in outside
    welch = width_reading(float("inf"), (0.25, [91.5, 91.6]), (0.5, [92.5, 92.9]))
    assert "Welch t = " in welch and "eps = inf" in welch and "cannot tell" not in welch


def test_the_profile_table_counts_each_profiles_training_runs():
    """The README's profile table states each profile's number of training runs: it is what the profile plans."""
    from dirdp.experiments import Profile

    rows = re.findall(r"^\| `config/(\w+)\.yaml`[^|]*\|[^|]*\| ([\d,]+)[ (][^|]*\|", (REPO / "README.md").read_text(), re.M)
    assert {name for name, _ in rows} == {"paper", "cpu", "gpu", "quick", "smoke"}, rows
    for name, count in rows:
        assert int(count.replace(",", "")) == len(Profile.load(REPO / "config" / f"{name}.yaml").all_runs()), name


def test_single_against_seeds_says_how_far_and_whether_inside():
    from dirdp.report.readme_campaign import single_against_seeds
    assert single_against_seeds(99.0, [98.78, 98.99, 99.06]) == ("0.39 times", "inside")  # (99.0 - 98.943) / 0.146
    assert single_against_seeds(98.5, [98.78, 98.99, 99.06]) == ("3.04 times", "outside")
    with pytest.raises(ValueError, match="found 1"):
        single_against_seeds(98.5, [98.78])


def _only_the_batchnorm_run(table, prov):
    """audit_batchnorm.csv as it is before the GroupNorm run lands: its accuracy rows are the BatchNorm run, then
    the GroupNorm run once it has finished (the README reads them in that order); the second is dropped."""
    acc = table.index[table.measure == "test accuracy"]
    assert 1 <= len(acc) <= 2 and "batch norm" in table.loc[acc[0], "model"], table.loc[acc, "model"].tolist()
    return table.drop(acc[1:]).reset_index(drop=True), prov


def test_the_groupnorm_sentence_reads_its_run_against_the_batchnorm_seeds(tmp_path):
    """Once the GroupNorm run is in audit_batchnorm.csv, the block sets it beside its BatchNorm twin (same seed) and
    against every seed of the twin's setting, from the run files."""
    import statistics

    import pandas as pd

    from dirdp.provenance import read_csv, write_csv
    from dirdp.report.runs import read_run, run_files

    results = _copy_results(tmp_path)
    path = results / "cpu" / "audit_batchnorm.csv"
    table, prov = _only_the_batchnorm_run(*read_csv(path))
    bn = table[table.measure == "test accuracy"]
    seeds = [r["test"] for r in map(read_run, run_files(results / "runs" / "cpu")) if r["dataset"] == "mnist"
             and r["method"] == "alg1" and r["norm"] == "batch" and r["eps"] == 1 and r["width"] == 0.25]
    assert len(seeds) >= 2
    gn = bn.assign(model="GroupNorm twin", value=min(seeds) - 1.0, run="results/runs/cpu/mnist/alg1_gn_eps1_seed0.json")
    write_csv(pd.concat([table, gn], ignore_index=True), path, prov)
    text = readme.render(results, "cpu")["audit-batchnorm"][1]
    mean, std = sum(seeds) / len(seeds), statistics.stdev(seeds)
    assert f"test accuracy {min(seeds) - 1.0:.2f} against {bn.value.iloc[0]:.2f} with BatchNorm" in text
    assert f"BatchNorm over its {len(seeds)} seeds gives {mean:.2f} ± {std:.2f} (n = {len(seeds)})" in text
    assert f"lies outside their range, {(mean - min(seeds) + 1.0) / std:.2f} times their seed std" in text
    assert "nothing is tested" in text and "has not finished" not in text


def test_a_batchnorm_twin_missing_from_the_runs_is_a_readme_error_that_says_what_to_do(tmp_path):
    """audit_batchnorm.csv naming a BatchNorm run the runs folder lacks (inconsistent results) is the README
    generator's clear error (exit 2 through the CLI), not a bare ValueError's traceback."""
    import pandas as pd

    from dirdp.provenance import read_csv, write_csv

    results = _copy_results(tmp_path)
    path = results / "cpu" / "audit_batchnorm.csv"
    table, prov = _only_the_batchnorm_run(*read_csv(path))
    bn = table.measure == "test accuracy"
    table.loc[bn, "run"] = "results/runs/cpu/mnist/alg1_eps1_seed99.json"
    gn = table[bn].assign(model="GroupNorm twin", run="results/runs/cpu/mnist/alg1_gn_eps1_seed0.json")
    write_csv(pd.concat([table, gn], ignore_index=True), path, prov)
    with pytest.raises(readme.ReadmeError, match=r"alg1_eps1_seed99\.json.*not among.*rerun the notebook audit_batchnorm"):
        readme.render(results, "cpu")


def _membership_rows(block: str) -> list[list[str]]:
    lines = [ln.strip() for ln in block.splitlines() if ln.strip().startswith("| ") and "---" not in ln]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]


def test_each_row_of_the_released_models_membership_table_names_one_model(tmp_path):
    """Rows of the membership table on the released models are told apart by what trained them (model, method,
    claimed eps, seed), not only by their numbers; the seed is the run JSON's."""
    import json

    head, *rows = _membership_rows(readme.render(REPO / "results", "cpu")["audit-membership-learned"][1])
    key = [head.index(c) for c in ("model", "method", "claimed eps", "seed")]
    ids = [tuple(r[i] for i in key) for r in rows]
    assert len(rows) >= 2 and len(set(ids)) == len(ids), ids
    results = _copy_results(tmp_path)
    path = results / "runs" / "cpu" / "mnist" / "alg1_eps1_seed1.json"
    rec = json.loads(path.read_text())
    path.write_text(json.dumps({**rec, "seed": 7}))
    _, *moved = _membership_rows(readme.render(results, "cpu")["audit-membership-learned"][1])
    seeds = [r[head.index("seed")] for r in moved if r[head.index("test accuracy")] == f"{rec['test_accuracy']:.2f}"]
    assert seeds == ["7"], seeds


def test_the_privacy_cost_reading_pairs_eps_inf_with_eps_2_at_each_width():
    """The width block tells what width does to the model (eps = inf) from what it does to the cost of privacy:
    the gap eps = inf minus eps = 2 at each width that ran both, with every term's n, tested only where n >= 2."""
    import pandas as pd

    from dirdp.report.readme_campaign import privacy_cost_reading

    cols = ["eps", "width", "mean", "std", "n", "paper_full_width"]
    t = pd.DataFrame([(2.0, 0.25, 86.69, 2.81, 3, 91.13), (2.0, 0.5, 90.40, None, 1, 91.13),
                      (float("inf"), 0.25, 91.54, None, 1, 93.13)], columns=cols)
    one = privacy_cost_reading(t)
    assert "+4.85 points at 0.25x (n = 1 at eps = inf, n = 3 at eps = 2)" in one, one
    assert "full width: +2.00" in one and "only 0.25x has run at both" in one and "Welch" not in one
    both = privacy_cost_reading(pd.concat([t, pd.DataFrame([(float("inf"), 0.5, 92.00, None, 1, 93.13)], columns=cols)]))
    assert "+1.60 points at 0.5x (n = 1 at eps = inf, n = 1 at eps = 2)" in both, both
    assert "the cost moves by -3.25 points, not tested" in both and "n = 1 in a term at 0.25x, 0.5x" in both
    seeds = t.assign(std=[2.81, 0.3, 0.2], n=[3, 2, 2])
    seeds = pd.concat([seeds, pd.DataFrame([(float("inf"), 0.5, 92.00, 0.1, 2, 93.13)], columns=cols)])
    tested = privacy_cost_reading(seeds)
    assert tested.count("Welch t = ") == 2 and "n = 1 in a term" not in tested, tested
    assert privacy_cost_reading(t[t.eps == 2.0]) is None


def test_the_full_width_cost_multiplies_each_measured_step_by_the_papers_t(tmp_path):
    """The full-width run's cost on these cores is the benchmarked Algorithm 1 step at each thread count times the
    paper's T (FashionMNIST: 9,600), with the command that measured it; no benchmark file is a ReadmeError."""
    from dirdp.report.readme_campaign import ReadmeError, full_width_cost
    from dirdp.report.readme_sections import Sources

    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    src = Sources(tmp_path / "results", "cpu")
    with pytest.raises(ReadmeError, match="bench_full_width_t<n>.json"):
        full_width_cost(src)
    for threads, step in ((1, 9.0), (2, 6.0)):
        prov = {"device": "cpu: X", "config": {"command": f"bench t{threads}", "load_average_1min_at_end": 0.5}}
        (folder / f"bench_full_width_t{threads}.json").write_text(json.dumps(
            {"rows": [{"threads": threads, "reps": 3, "algorithm1_s": step}], "provenance": prov}))
    text = full_width_cost(src)
    assert "9.00 s on 1 thread (`bench t1`" in text and "6.00 s on 2 threads (`bench t2`" in text, text
    assert "are 24.0 h on 1 and 16.0 h on 2 thread(s)" in text and "1.50x as fast" in text, text


def test_the_cpu_precision_block_is_the_sweep_json_as_tables(tmp_path):
    """Every configuration of bench_sweep.json is one table row with its s/step, ratio and fraction of peak; the
    machine, the load and the command come from the same file; the peaks per thread count."""
    from dirdp.report.readme_campaign import cpu_precision
    from dirdp.report.readme_sections import Sources

    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    rows = [dict(width=w, method=m, precision=p, threads=t, median_s=s, vs_fp32=v, gflops=g, fraction_of_peak=f)
            for w, m, p, t, s, v, g, f in [(1.0, "alg1", "fp32", 2, 2.0, 1.0, 131.0, 0.9),
                                           (1.0, "alg1", "bf16+cl", 2, 1.0, 0.5, 262.0, 0.71),
                                           (0.25, "nonprivate", "bf16", 1, 0.25, 0.8, 66.0, 0.4)]]
    (folder / "bench_sweep.json").write_text(json.dumps(dict(
        rows=rows, peaks_gflops={"fp32_t2": 145.6, "bf16_t2": 369.4, "fp32_t1": 73.0, "bf16_t1": 185.0},
        load=dict(load_1min_before=0.12, others_cpu_fraction=0.011, cpus=2), cpu="Xeon X", avx512_bf16=True,
        amx_bf16=False, provenance={"config": {"command": "python -m dirdp bench --sweep"}})))
    text = cpu_precision(Sources(tmp_path / "results", "cpu"))
    assert "| Xeon X | yes | no | 0.12 | 1.1% of 2 | `python -m dirdp bench --sweep` |" in text
    assert "| 1x | Algorithm 1 | bf16 + channels_last | 2 | 1.000 | 0.50 | 262 | 71% |" in text
    assert "| 0.25x | non-private | bf16 | 1 | 0.250 | 0.80 | 66 | 40% |" in text
    assert "| 1 | 73 | 185 |" in text and "| 2 | 146 | 369 |" in text
    assert text.index("| 1x | Algorithm 1 | bf16 + channels_last") < text.index("| 1x | Algorithm 1 | fp32")
