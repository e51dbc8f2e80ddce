"""The result numbers of the README and of docs/ come from the result files (issue 16, part 2; issue 35).

Every number the README or a docs page states about a result is in a generated block (``python -m workflow readme``);
these tests check that each block equals what the committed files of the cpu profile give, that a block really
follows its file, and that the results sections state no number by hand outside the blocks.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import copy_pages, copy_results
from workflow.report import readme

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
# headline_cells.csv is written by the headline notebook (issue 35, item 2); until it is committed the README's
# findings block cannot be made, and the tests below run on a copy of the results with tests/data's fixture
HEADLINE = REPO / "results" / "cpu" / "headline_cells.csv"

# The results sections: (page, from the first marker, to the second, exclusive; None: to the end of the page).
RESULT_SECTIONS = [("README.md", "## What we found", "## Run it"),
                   ("docs/results.md", "## The paper's cells at reduced width", None),
                   ("docs/audit.md", "**What we measured**", "**What does hold.**"),
                   ("docs/library.md", "- **LATENT** (Chamikara et al.", None)]
# Numbers the prose of those sections may state: names (Theorem 10, Eq. (1), Table 7, Figure 2, CPU cores, 3-hour
# sessions, slopes 1 and 1/2), protocol settings (eps = 0.5, 1, 2, 3; alpha = 7; 10-bit codes; 7x7 pooling;
# 784 inputs; the RDP order cap 256; the 95% of every interval) and one cited claim (LATENT's 95-96% on MNIST, from
# its paper). A result number must go into a generated block instead.
ALLOWED = {"0.5", "1", "2", "3", "7", "10", "95-96%", "1e-3", "256", "95%"}


@pytest.mark.skipif(not HEADLINE.exists(), reason="results/cpu/headline_cells.csv is not committed yet: "
                    "test_without_headline_cells_the_findings_block_is_a_one_line_error runs instead")
def test_every_generated_block_equals_what_its_files_give():
    changed = readme.update(README, REPO / "results", "cpu", check=True)
    assert changed == [], (f"generated blocks {changed} differ from the result files; run `python -m workflow "
                           f"readme`:\n" + readme.diff(README, REPO / "results", "cpu"))


@pytest.mark.skipif(HEADLINE.exists(), reason="results/cpu/headline_cells.csv is committed")
def test_without_headline_cells_the_findings_block_is_a_one_line_error():
    proc = subprocess.run([sys.executable, "-m", "workflow", "readme", "--check"], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith("error: results/cpu/headline_cells.csv: missing"), proc.stderr
    # every other block equals what its files give
    have = readme.page_blocks(README)
    names = {name for found in have.values() for name in found} - {"findings"}
    made = readme.render(REPO / "results", "cpu", names)
    stale = [name for found in have.values() for name, body in found.items() if name in made and made[name][1] != body]
    assert stale == [], f"generated blocks {stale} differ from the result files; run `python -m workflow readme`"


def test_the_pages_have_the_blocks_the_results_need():
    have = readme.page_blocks(README)
    where = {name: page.relative_to(REPO).as_posix() for page, found in have.items() for name in found}
    # every builder has its block on one page, and no page has a block without a builder
    from workflow.report.readme_sections import builders
    assert set(where) == set(builders()), set(where) ^ set(builders())
    assert where["findings"] == where["privacy-cost"] == where["timings"] == where["scope"] == "README.md"
    assert where["findings-reduced-width"] == "docs/results.md"
    assert {where[n] for n in where if n.startswith("audit-")} == {"docs/audit.md"}
    assert all(body.strip() for found in have.values() for body in found.values())


def test_a_block_follows_its_file(tmp_path):
    results = copy_results(tmp_path)
    copy = copy_pages(tmp_path, results)
    path = results / "cpu" / "audit_membership.csv"
    text = path.read_text().replace("0.515421", "0.987654")
    assert text != path.read_text()
    path.write_text(text)
    made = readme.render(results, "cpu", {"audit-membership"})
    assert "| 0.988 |" in made["audit-membership"][1]
    assert readme.update(copy, results, "cpu", check=True) == ["audit-membership"]
    assert readme.update(copy, results, "cpu") == ["audit-membership"]
    assert "| 0.988 |" in (tmp_path / "docs" / "audit.md").read_text()
    assert readme.update(copy, results, "cpu", check=True) == []


@pytest.mark.parametrize("name, column, block", [
    ("audit_subspace", "eps_lower_bound", "audit-subspace"),
    ("audit_batchnorm", "value", "audit-batchnorm"),
    ("table7_high_orders", "first_order_certifying", "table7-high-orders"),
    ("table7", "eps_at_paper_rstar", "table7"),
    ("width_effect", "mean", "width-effect"),
    ("table4_fashionmnist", "paper", "dpsgd-inception"),
    ("headline_cells", "ci_low", "findings"),
    ("headline_cells", "ours_mean", "findings-reduced-width"),
    ("privacy_cost", "paper_cost", "privacy-cost"),
])
def test_each_block_follows_its_file(tmp_path, name, column, block):
    from dirdp.provenance import read_csv, write_csv

    results = copy_results(tmp_path)
    before = readme.render(results, "cpu", {block})[block][1]
    table, prov = read_csv(results / "cpu" / f"{name}.csv")
    table[column] = table[column] * 3 + 7  # every value of the column moves
    write_csv(table, results / "cpu" / f"{name}.csv", prov)
    assert readme.render(results, "cpu", {block})[block][1] != before, block


def test_check_names_the_drifted_block_and_its_page_and_exits_1(tmp_path):
    """``readme --check`` covers the docs pages: a stale block on docs/audit.md is named with its page."""
    results = copy_results(tmp_path)
    copy = copy_pages(tmp_path, results)
    page = tmp_path / "docs" / "audit.md"
    text = page.read_text()
    body = readme.blocks(text)["audit-canary"]
    page.write_text(text.replace(body, body.replace("4.91", "4.97", 1)))
    proc = subprocess.run([sys.executable, "-m", "workflow", "readme", "--check", "--readme", str(copy),
                           "--results", str(results)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 1
    assert f"{page}: generated block(s) ['audit-canary'] differ" in proc.stderr
    assert "-" in proc.stderr and "4.97" in proc.stderr


@pytest.mark.parametrize("args, says", [
    (["--results", "/nonexistent/results"], "/nonexistent/results/cpu: no such results folder"),
    (["--readme", "/nonexistent/README.md"], "/nonexistent/README.md: no such file"),
])
def test_bad_input_is_one_line_and_exit_2(args, says):
    proc = subprocess.run([sys.executable, "-m", "workflow", "readme", "--check", *args], capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and says in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1


def test_an_unclosed_block_is_an_error(tmp_path):
    with pytest.raises(readme.ReadmeError, match="no matching"):
        readme.blocks("<!-- generated: x (python -m workflow readme; from f) -->\nbody\n")


def _prose_numbers(text: str) -> list[str]:
    text = re.sub(r"```.*?```", "", text, flags=re.S)      # code blocks
    text = readme.BLOCK.sub("", text)
    text = re.sub(r"`[^`]*`", "", text)                     # code: file names, commands, field names
    text = re.sub(r"\]\([^)]*\)", "]", text)               # link targets
    text = re.sub(r"\b[A-Za-z]+\d+\w*", "", text)          # names such as CIFAR10, r*, h(r)'s ...
    return re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?:e-?\d+)?(?:-\d+)?%?", text)


def test_no_result_number_is_typed_by_hand_in_the_results_sections():
    stray = []
    for page, start, end in RESULT_SECTIONS:
        text = (REPO / page).read_text()
        section = text[text.index(start):] if end is None else text[text.index(start):text.index(end, text.index(start))]
        stray += [(page, n) for n in _prose_numbers(section) if n not in ALLOWED]
    assert stray == [], (f"numbers typed by hand in the results sections: {stray}; put them in a generated "
                         "block (workflow/report/readme_sections.py) or, for a protocol setting, in ALLOWED with a reason")


def test_the_number_check_catches_a_hand_typed_number():
    assert _prose_numbers("accuracy 85.30 and AUC 0.532 (`results/cpu/x.csv`, Table 7)") == ["85.30", "0.532", "7"]


def test_the_width_block_is_the_width_table_row_by_row(tmp_path):
    """One row per (data set, eps, width, precision) of width_effect.csv, mean ± std (n) beside the paper's full-width value;
    a bf16 row says so; no reading of the rows is added (the statistics are the notebook's to write)."""
    import pandas as pd

    from dirdp.provenance import read_csv, write_csv

    results = copy_results(tmp_path)
    table, prov = read_csv(results / "cpu" / "width_effect.csv")
    fm2 = table[(table.dataset == "fashionmnist") & (table.eps == 2)].iloc[[0]]  # a row whose paper value is 91.13
    extra = fm2.assign(width=1.0, mean=91.5, std=0.25, n=2, precision="bf16", diff_to_paper=0.37)
    write_csv(pd.concat([table, extra], ignore_index=True), results / "cpu" / "width_effect.csv", prov)
    text = readme.render(results, "cpu", {"width-effect"})["width-effect"][1]
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert len(rows) == len(table) + 1 and text.count("\n") == len(table) + 3, text
    assert "| FashionMNIST | 2 | 1x, bf16 | 91.50 ± 0.25 (n = 2) | 91.13 ± 0.18 | +0.37 |" in text, text
    names = [ln.split(" | ")[0][2:] for ln in rows]  # FashionMNIST's rows first, then MNIST's
    assert names == sorted(names, key=lambda n: n != "FashionMNIST"), names


def test_the_profile_table_counts_each_profiles_training_runs():
    """The profile table of docs/reproduction.md states each profile's number of training runs: it is what the
    profile plans."""
    from workflow.experiments import Profile

    rows = re.findall(r"^\| `config/(\w+)\.yaml`[^|]*\|[^|]*\| ([\d,]+)[ (][^|]*\|",
                      (REPO / "docs" / "reproduction.md").read_text(), re.M)
    assert {name for name, _ in rows} == {"paper", "cpu", "gpu", "quick", "smoke"}, rows
    for name, count in rows:
        assert int(count.replace(",", "")) == len(Profile.load(REPO / "config" / f"{name}.yaml").all_runs()), name


def test_the_batchnorm_tables_say_what_each_column_holds(tmp_path):
    """The influence columns are measured maxima and medians over random replacements, named as such (the old
    ``median_logit_change`` held the median of each batch's maximum); the running-statistics rows face the claim of
    their own adjacency (add/remove at q = 1: none); a CSV with the old columns asks for the notebook's rerun."""
    from dirdp.provenance import read_csv, write_csv

    text = readme.render(REPO / "results", "cpu", {"audit-batchnorm"})["audit-batchnorm"][1]
    assert "median over batches of each batch's largest change" in text and "largest measured" in text
    assert "none (no finite claim)" in text and "| no finite claim |" in text and "Lemma 9" in text
    results = copy_results(tmp_path)
    table, prov = read_csv(results / "cpu" / "audit_batchnorm.csv")
    write_csv(table.rename(columns={"median_batch_max_logit_change": "median_logit_change"}),
              results / "cpu" / "audit_batchnorm.csv", prov)
    with pytest.raises(readme.ReadmeError, match=r"column\(s\) \['median_batch_max_logit_change'\] missing.*rerun"):
        readme.render(results, "cpu", {"audit-batchnorm"})
    write_csv(table.drop(columns="kind"), results / "cpu" / "audit_batchnorm.csv", prov)  # made before the kind key
    with pytest.raises(readme.ReadmeError, match=r"audit_batchnorm.csv: column\(s\) \['kind'\] missing"):
        readme.render(results, "cpu", {"audit-batchnorm"})


def _membership_rows(block: str) -> list[list[str]]:
    lines = [ln.strip() for ln in block.splitlines() if ln.strip().startswith("| ") and "---" not in ln]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]


def test_each_row_of_the_released_models_membership_table_names_one_model(tmp_path):
    """Rows of the membership table on the released models are told apart by what trained them (model, method,
    claimed eps, seed), not only by their numbers; the seed is the run JSON's."""
    import json

    head, *rows = _membership_rows(readme.render(REPO / "results", "cpu",
                                                 {"audit-membership-learned"})["audit-membership-learned"][1])
    key = [head.index(c) for c in ("data", "model", "method", "claimed eps", "seed")]
    ids = [tuple(r[i] for i in key) for r in rows]
    assert len(rows) >= 2 and len(set(ids)) == len(ids), ids
    results = copy_results(tmp_path)
    path = results / "runs" / "cpu" / "mnist" / "alg1_eps1_seed1.json"
    rec = json.loads(path.read_text())
    path.write_text(json.dumps({**rec, "seed": 7}))
    _, *moved = _membership_rows(readme.render(results, "cpu")["audit-membership-learned"][1])
    seeds = [r[head.index("seed")] for r in moved if r[head.index("test accuracy (%)")] == f"{rec['test_accuracy']:.2f}"]
    assert seeds == ["7"], seeds


def test_the_full_width_cost_multiplies_each_measured_step_by_the_papers_t(tmp_path):
    """The full-width run's cost on these cores, a table: the benchmarked Algorithm 1 step at each thread count and
    that step times the paper's T (FashionMNIST: 9,600), with the command that measured it; no benchmark file is a
    ReadmeError."""
    from workflow.report.readme_campaign import ReadmeError, full_width_cost
    from workflow.report.readme_sections import Sources

    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    src = Sources(tmp_path / "results", "cpu")
    with pytest.raises(ReadmeError, match=r"no bench_full_width_t\*.json \(make one with python -m workflow bench"):
        full_width_cost(src)
    for threads, step in ((1, 9.0), (2, 6.0)):
        prov = {"device": "cpu: X", "config": {"command": f"bench t{threads}", "load_average_1min_at_end": 0.5}}
        (folder / f"bench_full_width_t{threads}.json").write_text(json.dumps(
            {"rows": [{"threads": threads, "reps": 3, "algorithm1_s": step}], "provenance": prov}))
    text = full_width_cost(src)
    assert "| threads | Algorithm 1 s/step (median) | T = 9,600 steps (h) |" in text, text
    assert "| 1 | 9.00 (of 3) | 24.0 | 0.5 | cpu: X | `bench t1` |" in text, text
    assert "| 2 | 6.00 (of 3) | 16.0 | 0.5 | cpu: X | `bench t2` |" in text, text


def test_the_layout_block_gives_each_layouts_throughput_over_one_run_on_all_cores(tmp_path):
    """bench_layout*.json as a table: a row per layout, its processes, threads, median s/step and summed steps a
    second, and that throughput over the one-run-on-all-cores layout's; no bench file is a ReadmeError."""
    from workflow.report.readme_campaign import ReadmeError, cpu_layout
    from workflow.report.readme_sections import Sources

    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    src = Sources(tmp_path / "results", "cpu")
    with pytest.raises(ReadmeError, match="bench_layout"):
        cpu_layout(src)
    rows = [dict(layout="one run, all cores", processes=1, threads_each=2, median_s_per_step=0.5, steps_per_s=2.0),
            dict(layout="one run per core", processes=2, threads_each=1, median_s_per_step=0.8, steps_per_s=2.5)]
    (folder / "bench_layout_x.json").write_text(json.dumps(dict(
        rows=rows, load=dict(others_cpu_fraction=0.01), provenance=dict(device="cpu: X"))))
    text = cpu_layout(src)
    assert "| `bench_layout_x.json` | cpu: X | one run per core | 2 | 1 | 0.80 | 2.500 | 1.25 | 1.0% |" in text, text
    assert "| `bench_layout_x.json` | cpu: X | one run, all cores | 1 | 2 | 0.50 | 2.000 | 1.00 | 1.0% |" in text, text


def test_the_dpsgd_block_bolds_the_fastest_variant_and_says_why_one_failed(tmp_path):
    from workflow.report.readme_campaign import ReadmeError, dpsgd_full_width
    from workflow.report.readme_sections import Sources

    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    src = Sources(tmp_path / "results", "cpu")
    with pytest.raises(ReadmeError, match="bench_dpsgd"):
        dpsgd_full_width(src)
    cfg = dict(width=1.0, batch=250, threads=1, reps=3, command="bench dpsgd")
    rows = [dict(variant="alg1", median_s_per_step=2.0, over_algorithm1=1.0),
            dict(variant="opacus hooks", median_s_per_step=7.0, over_algorithm1=3.5),
            dict(variant="ghost", error="NotImplementedError: no")]
    (folder / "bench_dpsgd_x.json").write_text(json.dumps(dict(
        rows=rows, fastest_dpsgd="opacus hooks", provenance=dict(device="cpu: X", config=cfg))))
    text = dpsgd_full_width(src)
    assert "| **opacus hooks** | 7.00 | **3.50x** |" in text and "| alg1 | 2.00 | 1.00x |" in text, text
    assert "| ghost | — | NotImplementedError: no |" in text and "`bench dpsgd`" in text, text


def test_the_cpu_precision_block_is_the_sweep_jsons_as_tables(tmp_path):
    """Every configuration of every bench_sweep*.json is one table row with each machine's s/step, ratio to fp32
    and fraction of that machine's peak ("—" where a machine lacks it); each machine, its load and its command come
    from its own file; the peaks per thread count and machine; no sweep file is a ReadmeError."""
    from workflow.report.readme_campaign import ReadmeError, cpu_precision
    from workflow.report.readme_sections import Sources

    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    src = Sources(tmp_path / "results", "cpu")
    with pytest.raises(ReadmeError, match="no bench_sweep"):
        cpu_precision(src)

    def sweep(name, cpu, configs, peaks, load):
        rows = [dict(width=w, method=m, precision=p, threads=t, median_s=s, vs_fp32=v, fraction_of_peak=f)
                for w, m, p, t, s, v, f in configs]
        (folder / name).write_text(json.dumps(dict(
            rows=rows, peaks_gflops=peaks, load=dict(load_1min_before=load, others_cpu_fraction=0.011, cpus=2),
            cpu=cpu, avx512_bf16=True, amx_bf16=False,
            provenance={"config": {"command": f"python -m workflow bench --sweep ({cpu})"}})))

    sweep("bench_sweep.json", "Xeon X", [(1.0, "alg1", "fp32", 2, 2.0, 1.0, 0.9), (1.0, "alg1", "bf16+cl", 2, 1.0, 0.5, 0.71),
                                         (0.25, "nonprivate", "bf16", 1, 0.25, 0.8, 0.4)],
          {"fp32_t2": 145.6, "bf16_t2": 369.4, "fp32_t1": 73.0, "bf16_t1": 185.0}, 0.12)
    sweep("bench_sweep_epyc.json", "EPYC Y", [(1.0, "alg1", "fp32", 2, 2.5, 1.0, 0.7), (1.0, "alg1", "bf16+cl", 2, 0.9, 0.36, 0.8)],
          {"fp32_t2": 141.0, "bf16_t2": 363.0}, 0.78)
    text = cpu_precision(src)
    assert "| `bench_sweep.json` | Xeon X | yes | no | 0.12 | 1.1% of 2 | `python -m workflow bench --sweep (Xeon X)` |" in text
    assert "| `bench_sweep_epyc.json` | EPYC Y | yes | no | 0.78 | 1.1% of 2 |" in text
    assert "| width | method | precision | threads | Xeon X: s/step (median) | vs fp32 | of its peak | EPYC Y: s/step" in text
    assert "| 1x | Algorithm 1 | bf16 + channels_last | 2 | 1.000 | 0.50 | 71% | 0.900 | 0.36 | 80% |" in text
    assert "| 0.25x | non-private | bf16 | 1 | 0.250 | 0.80 | 40% | — | — | — |" in text
    assert "| 1 | 73 | 185 | — | — |" in text and "| 2 | 146 | 369 | 141 | 363 |" in text
    assert text.index("| 1x | Algorithm 1 | bf16 + channels_last") < text.index("| 1x | Algorithm 1 | fp32")


def test_the_readmes_precision_block_shows_the_validation_and_each_processors_full_width_step(tmp_path):
    """The README's precision block: fp32 and bf16 with n, bf16 - fp32 with its interval and the notebook's verdict
    (from precision_validation.csv), then per sweep file the full-width Algorithm-1 step at 2 threads in fp32 and
    bf16 + channels_last, the ratio and the fraction of the peak; an undecided validation is a ReadmeError."""
    from workflow.report.readme_campaign import ReadmeError
    from workflow.report.readme_front import precision
    from workflow.report.readme_sections import Sources

    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    head = "# provenance: {}\nrow,n,mean,std,seeds,tests,ci_lo,ci_hi,df,margin,verdict\n"
    cells = "fp32,3,98.9,0.15,0 1 2,a,,,,,\nbf16,3,98.8,0.2,0 1 2,b,,,,,\n"
    (folder / "precision_validation.csv").write_text(head + cells + "bf16 - fp32,6,-0.1,,,,,,,0.5,no decision\n")
    src = Sources(tmp_path / "results", "cpu")
    with pytest.raises(ReadmeError, match="no decided"):
        precision(src)
    (folder / "precision_validation.csv").write_text(head + cells + "bf16 - fp32,6,-0.1,,,,-0.3,0.1,3.9,0.5,adopt bf16\n")
    rows = [dict(width=1.0, method="alg1", precision="fp32", threads=2, median_s=2.5, vs_fp32=1.0, fraction_of_peak=0.7),
            dict(width=1.0, method="alg1", precision="bf16+cl", threads=2, median_s=0.9, vs_fp32=0.36,
                 fraction_of_peak=0.8),
            dict(width=1.0, method="alg1", precision="bf16+cl", threads=1, median_s=1.7, vs_fp32=0.41,
                 fraction_of_peak=0.84)]
    (folder / "bench_sweep_x.json").write_text(json.dumps(dict(rows=rows, cpu="EPYC Y")))
    text = precision(Sources(tmp_path / "results", "cpu"))  # a new reader: Sources caches what it read
    assert "| test accuracy (%) | 98.90 ± 0.15 (n = 3) | 98.80 ± 0.20 (n = 3) | -0.10 [-0.30, +0.10] | adopt bf16 |" in text
    assert "| EPYC Y | 2.50 | 0.90 | **0.36x** | 80% | `bench_sweep_x.json` |" in text


def test_the_bench_block_shows_every_baselines_benchmark_file(tmp_path):
    """docs/results.md's bench block: one line per bench_baselines*.json (its command, machine, threads, load) and
    one row per model of each, with DP-SGD / Algorithm 1; no such file is a ReadmeError."""
    from workflow.report.readme_campaign import ReadmeError
    from workflow.report.readme_sections import Sources, bench

    folder = tmp_path / "results" / "cpu"
    folder.mkdir(parents=True)
    with pytest.raises(ReadmeError, match="no bench_baselines"):
        bench(Sources(tmp_path / "results", "cpu"))
    for name, width, threads, dpsgd in (("bench_baselines.json", 0.25, 1, 1.2), ("bench_baselines_w1.json", 1.0, 2, 10.0)):
        row = dict(model="inception", width=width, batch=250, threads=threads, reps=3, nonprivate_s=2.0,
                   algorithm1_s=2.0, dpsgd_s=dpsgd, dpsgd_over_algorithm1=dpsgd / 2.0)
        (folder / name).write_text(json.dumps(dict(rows=[row], provenance=dict(
            device="cpu: X", config=dict(command=f"bench {name}", load_average_1min_at_end=1.5)))))
    text = bench(Sources(tmp_path / "results", "cpu"))
    assert "| `bench_baselines_w1.json` | `bench bench_baselines_w1.json` | cpu: X | 2 | 3 interleaved steps | 1.5 |" in text
    assert "| Inception, 1x width, batch 250 | 2 | 2.000 | 2.000 | 10.000 | 1.00 | **5.00** |" in text
    assert "| Inception, 0.25x width, batch 250 | 1 | 2.000 | 2.000 | 1.200 | 1.00 | **0.60** |" in text


def test_the_subspace_table_shows_each_rows_adversary_claim_and_verdict():
    """Each row of the subspace block names what the adversary sees and the claim for its own adjacency, with the
    notebook's verdict; q = 1 add/remove rows have no finite claim; the verdict counts add up to the rows."""
    from dirdp.provenance import read_csv

    table, _ = read_csv(REPO / "results" / "cpu" / "audit_subspace.csv")
    text = readme.render(REPO / "results", "cpu", {"audit-subspace"})["audit-subspace"][1]
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "---" not in ln]
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    body = [[c.strip() for c in ln.strip("|").split("|")] for ln in rows[1:len(table) + 1]]
    assert len(body) == len(table)
    sees, claim, verdict = (head.index(c) for c in ("the adversary sees", "claim for this adjacency", "verdict"))
    assert {r[sees] for r in body} <= {"every update", "final model"}
    for r, (_, row) in zip(body, table.iterrows()):
        assert r[verdict] == row.verdict
        assert r[claim].startswith("none (no finite claim)") == (not math.isfinite(row.matched_claim_eps))
    one_add = table[(table.q >= 1) & (table.adjacency == "add") & (table.method == "alg1")]
    assert len(one_add) and (one_add.verdict == "no finite claim").all()
    counts = [int(ln.strip("|").split("|")[-1]) for ln in text.split("Verdicts, counted:")[1].splitlines()
              if ln.startswith("| ") and "---" not in ln and "rows |" not in ln]
    assert sum(counts) == len(table)


@pytest.mark.skipif(not HEADLINE.exists(), reason="results/cpu/headline_cells.csv is not committed yet")
def test_the_accuracy_prose_says_what_the_full_width_rows_decide_and_nothing_more():
    """The findings' Accuracy bullet says what the full-width (1x) rows of headline_cells.csv support and nothing
    more: no verdict there finds ours below or above the paper (each is within a point or undecided, and a cell with
    one run or no printed spread has none), and the CPU campaign is in progress exactly while a full-width cell the
    profile plans has fewer runs than planned. A verdict or a landed run that changes either fails here until the
    prose is updated."""
    from collections import Counter

    import pandas as pd

    from dirdp.provenance import read_csv
    from workflow.experiments import Profile

    text = README.read_text()
    bullet = " ".join(text[text.index("- **Accuracy.**"):text.index("- **Privacy.**")].split())
    cells, _ = read_csv(HEADLINE)
    full = cells[(cells["width"] == 1.0) & (cells["method"] == "Algorithm 1")]
    verdicts = [str(v) for v in full["verdict"].dropna()]
    sided = [v for v in verdicts if v.startswith(("below", "above"))]  # keys: below, below_within, above, ...
    claim = ("At the paper's width no verdict finds ours below or above the paper: each is within a point of it or "
             "undecided")
    assert (claim in bullet) == (not sided), (sided, bullet)
    if claim in bullet:
        assert all(v in ("within", "undecided", "one_run") for v in verdicts), verdicts
    one = full[(full["n"] == 1) | full["paper_std"].isna()]
    assert "a cell with one run, or without a printed spread, has none" in bullet
    assert all(pd.isna(v) or v == "one_run" for v in one["verdict"]), one
    plan = Counter((r.dataset, r.eps, r.precision or "fp32")
                   for r in Profile.load(REPO / "config" / "cpu.yaml").all_runs().values()
                   if r.method == "alg1" and r.width == 1.0 and r.norm is None)
    have = {(r.dataset, float(r.eps), r.precision): int(r.n) for r in full.itertuples()}
    in_progress = any(have.get(cell, 0) < n for cell, n in plan.items())
    assert plan and ("wait in the CPU campaign's queue" in bullet) == in_progress, (plan, have)


AUDIT_ROWS = REPO / "results" / "cpu" / "audit_released_models.csv"


def _width(model: str) -> float:
    """1 for "inception (full width, ...)", w for "inception (reduced width (wx channels)...)"."""
    if "full width" in model:
        return 1.0
    return float(re.search(r"reduced width \(([0-9.]+)x channels\)", model).group(1))


def test_the_membership_prose_says_which_released_models_show_a_signal_and_that_none_tests_the_claim():
    """The Privacy bullet's membership sentence: a signal (interval of AUC - null above zero) in every FashionMNIST
    Algorithm 1 model at 0.5x and 1x trained at eps >= 1, in some but not all of those at eps = 0.5, in none at a smaller
    width or on MNIST, and every AUC below what its claim allows. A new record that breaks any of these (an MNIST model
    at 1x with a signal, say) fails here until the prose says so."""
    from dirdp.provenance import read_csv

    bullet = " ".join(README.read_text().split("- **Privacy.**")[1].split("- **Accounting.**")[0].split())
    assert ("in every FashionMNIST Algorithm 1 model at 0.5x and 1x width trained at eps = 1 or more, in some but not "
            "all of those at eps = 0.5, and in none at a smaller width or on MNIST; every AUC is below what its claim "
            "allows") in bullet, bullet
    rows, _ = read_csv(AUDIT_ROWS)
    assert (rows["auc"] < rows["auc_allowed_by_claim"]).all()
    alg1 = rows[rows["method"] == "alg1"].assign(width=lambda t: t["model"].map(_width),
                                                 dataset=lambda t: t["data"].str.split(":").str[0])
    signal = alg1["auc_minus_null_ci_low"] > 0
    wide = (alg1["dataset"] == "fashionmnist") & alg1["width"].isin([0.5, 1.0])
    said, some = wide & (alg1["claimed_eps"] >= 1), wide & (alg1["claimed_eps"] < 1)  # every one; some, not all
    assert said.any() and (~said & ~some).any() and signal[some].any() and not signal[some].all()
    assert (signal == said)[~some].all(), alg1.loc[(signal != said) & ~some, ["run", "auc_minus_null_ci_low"]]


def test_the_findings_tables_call_one_runs_interval_a_prediction_interval(tmp_path):
    """n = 1 rows carry the paper-spread interval, a prediction interval, not a confidence interval: the header says
    "95% interval" and each row's interval column says which; every row of headline_cells.csv is in one of the two
    findings tables (at the paper's width in the README's, below it on the docs page)."""
    from dirdp.provenance import read_csv

    results = copy_results(tmp_path)
    made = readme.render(results, "cpu", {"findings", "findings-reduced-width"})
    cells, _ = read_csv(results / "cpu" / "headline_cells.csv")
    shown = []
    for name in ("findings", "findings-reduced-width"):
        header, _, *rows = made[name][1].splitlines()
        assert "[95% interval]" in header and "CI]" not in header
        shown += [row for row in rows if "not run yet" not in row]
    assert len(shown) == len(cells)
    for row in shown:
        cols = row.split(" | ")
        n = int(re.search(r"\(n = (\d+)\)", cols[5])[1])
        if "[" in cols[-3]:  # the row prints an interval
            assert ("prediction interval" in cols[-2]) == (n == 1) and ("CI" in cols[-2]) == (n >= 2), row


def test_every_table_of_a_block_is_written_by_the_one_renderer():
    """The builders of the generated blocks pick rows and columns and format cells; no builder writes a table line
    itself (workflow.report.markdown.table does), and the renderer writes what a page shows."""
    import ast

    from workflow.report.markdown import table

    for path in sorted((REPO / "workflow" / "report").glob("readme*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not node.value.lstrip().startswith(("| ", "|---")), f"{path.name}: a table line by hand"
    assert table(["a", "b"], [[1, "x"], ["", None]]) == "| a | b |\n|---|---|\n| 1 | x |\n|  | |"


def test_the_runs_blocks_name_a_one_run_audit_runs_model_and_canaries():
    """A one-run audit's training (canaries added, and for the control's pair the tanh CNN) is not a cell of the
    paper's tables: the runs and baselines blocks say so in the model column, and no other row does."""
    from dirdp.run_result import read_run
    from workflow.report.runs import run_files

    runs = [read_run(p) for p in run_files(REPO / "results" / "runs" / "cpu")]
    audited = [r for r in runs if r["canaries"]]
    assert {r["method"] for r in audited} >= {"alg1", "tempered"}, "the committed one-run audit's runs"
    made = readme.render(REPO / "results", "cpu", {"runs-alg1", "baselines"})
    text = made["runs-alg1"][1] + made["baselines"][1]
    marked = [ln for ln in text.splitlines() if "canaries" in ln]
    assert len(marked) == len(audited), marked
    models = [ln.split(" | ")[2] for ln in made["runs-alg1"][1].splitlines() if "canaries" in ln]
    tanh = [r for r in audited if r["method"] == "alg1" and r["model"] == "papernot_cnn"]  # the control's pair
    assert sum(m.startswith("tanh CNN, 1x") for m in models) == len(tanh) >= 1, models
    assert all(m.startswith(("tanh CNN, 1x", "1x, bf16")) for m in models), models  # else the paper's Inception
