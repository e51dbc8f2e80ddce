"""workflow.bench's GPU-campaign benchmark, run here on CPU at a tiny width, and its projections."""

import math
import sys
from pathlib import Path

import pytest

from workflow.bench import campaign as bench_campaign
from workflow.bench import projection
from workflow.experiments import Profile

pytestmark = pytest.mark.filterwarnings("ignore:Full backward hook is firing")
PAPER = Path(__file__).resolve().parents[1] / "config" / "paper.yaml"
FIELDS = {"model", "width", "batch", "precision", "device", "nonprivate_s", "algorithm1_s", "dpsgd_s", "dpsgd_note",
          "peak_mem_gib", "dpsgd_over_algorithm1", "algorithm1_over_nonprivate"}


@pytest.fixture(scope="module")
def rows():
    return bench_campaign.campaign_bench(("resnet9",), device="cpu", width=0.0625, reps=1, warmup=0)


@pytest.mark.slow
def test_campaign_rows_time_every_method_at_both_precisions(rows):
    assert [(r["model"], r["precision"]) for r in rows] == [("resnet9", "fp32"), ("resnet9", "bf16+cl")]
    for r in rows:
        assert FIELDS <= set(r)
        assert r["batch"] == 70 and r["width"] == 0.0625 and r["device"] == "cpu"
        assert r["nonprivate_s"] > 0 and r["algorithm1_s"] > 0
        assert r["dpsgd_s"] is not None and r["dpsgd_s"] > 0 and r["dpsgd_note"] is None  # bf16 autocast runs on CPU
        assert r["dpsgd_over_algorithm1"] == pytest.approx(r["dpsgd_s"] / r["algorithm1_s"])
        assert r["algorithm1_over_nonprivate"] == pytest.approx(r["algorithm1_s"] / r["nonprivate_s"])
        assert r["peak_mem_gib"] == {"nonprivate": None, "algorithm1": None, "dpsgd": None}  # no CUDA here


def test_campaign_without_opacus_still_times_the_rest(monkeypatch):
    for name in [k for k in sys.modules if k == "opacus" or k.startswith("opacus.")] + ["opacus"]:
        monkeypatch.setitem(sys.modules, name, None)  # any `import opacus...` now raises ImportError
    (row,) = bench_campaign.campaign_bench(("resnet9",), device="cpu", width=0.0625, reps=1, warmup=0, precisions=("fp32",))
    assert row["dpsgd_s"] is None and row["dpsgd_over_algorithm1"] is None and row["peak_mem_gib"]["dpsgd"] is None
    assert row["dpsgd_note"].startswith("opacus not importable")
    assert row["nonprivate_s"] > 0 and row["algorithm1_s"] > 0 and row["algorithm1_over_nonprivate"] > 0


def test_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="unknown precision"):
        bench_campaign.campaign_bench(("resnet9",), device="cpu", width=0.0625, precisions=("fp16",))


def row(model, precision="fp32", width=1.0, *, nonprivate, alg1, dpsgd, batch=250):
    return dict(model=model, width=width, batch=batch, precision=precision, nonprivate_s=nonprivate,
                algorithm1_s=alg1, dpsgd_s=dpsgd, dpsgd_note=None if dpsgd else "opacus not importable: x")


MNIST_PROFILE = {"profile": "t", "objects": ["table2_mnist"], "training": {"steps": 100},
                 "grids": {"table2_mnist": {"seeds": 2, "eps": [1, "inf"],
                                            "baselines": {"tempered": [1], "latent": [1]}}}}


def test_projection_is_steps_times_seconds_per_step_and_counts_what_it_cannot_project():
    prof = Profile.from_config(MNIST_PROFILE)  # per seed: alg1 at eps 1 and inf, tempered and LATENT at eps 1
    rows = [row("inception", nonprivate=0.01, alg1=0.02, dpsgd=0.05),
            row("inception", "bf16+cl", nonprivate=9.0, alg1=9.0, dpsgd=9.0),  # another precision: ignored
            row("inception", width=0.5, nonprivate=7.0, alg1=7.0, dpsgd=7.0)]  # another width: ignored
    p = projection.project(rows, prof)
    assert p["n_runs"] == 8 and p["n_projected"] == 4
    assert p["profile_serial_s"] == pytest.approx(2 * 100 * 0.02 + 2 * 100 * 0.01)
    assert {n["reason"]: n["runs"] for n in p["not_projected"]} == {
        "LATENT: its own model and training, not benchmarked": 2, "no fp32 row for papernot_cnn at width 1": 2}
    assert p["table1_cell_s"] is None  # no ResNet-18 row
    # Papernot's CNN benchmarked: tempered DP-SGD projected from its dpsgd_s
    p = projection.project(rows + [row("papernot_cnn", nonprivate=0.001, alg1=0.002, dpsgd=0.03)], prof)
    assert p["n_projected"] == 6 and p["profile_serial_s"] == pytest.approx(6.0 + 2 * 100 * 0.03)
    assert {(b["method"], b["runs"]) for b in p["breakdown"]} == {("alg1", 4), ("tempered", 2)}
    # bf16 rows at bf16+cl
    p = projection.project(rows, prof, precision="bf16+cl")
    assert p["profile_serial_s"] == pytest.approx(2 * 100 * 9.0 + 2 * 100 * 9.0)


def test_projection_scales_larger_batches_and_reports_missing_dpsgd():
    prof = Profile.from_config({"profile": "t", "objects": ["table9_sampling_rate", "table5_svhn"],
                                "grids": {"table9_sampling_rate": {"seeds": 1, "q_grid": [0.001, 0.01]},
                                          "table5_svhn": {"seeds": 1, "eps": [1], "baselines": {"dpsgd": [1]}}}})
    rows = [row("resnet18", nonprivate=0.04, alg1=0.05, dpsgd=None)]
    p = projection.project(rows, prof)
    # Table 9 (T = 20000, eps 4): q = 0.001 is a batch of 50 (kept at the benchmarked 250's time),
    # q = 0.01 one of 500 (twice it); SVHN Algorithm 1 at eps 1: T = 11722; its DP-SGD run has no time
    assert p["profile_serial_s"] == pytest.approx(20000 * 0.05 * (1 + 2) + 11722 * 0.05)
    assert p["batch_scaled_runs"] == 1 and p["n_runs"] == 4 and p["n_projected"] == 3
    (missing,) = p["not_projected"]
    assert missing["runs"] == 1 and missing["reason"].startswith("no dpsgd_s for resnet18 at fp32 (opacus not importable")


def test_table1_cell_and_the_paper_profile():
    rows = [row("resnet18", nonprivate=0.04, alg1=0.05, dpsgd=0.3), row("inception", nonprivate=0.01, alg1=0.02, dpsgd=0.1)]
    p = projection.project(rows, PAPER)
    assert p["table1_cell_s"] == pytest.approx(20000 * 0.05) and p["table1_steps"] == 20000
    assert p["n_runs"] == len(Profile.load(PAPER).all_runs()) > 1000
    assert p["n_projected"] + sum(n["runs"] for n in p["not_projected"]) == p["n_runs"]
    reasons = {n["reason"] for n in p["not_projected"]}
    assert "no fp32 row for resnet9 at width 1" in reasons and "no fp32 row for papernot_cnn at width 1" in reasons
    assert p["profile_serial_s"] == pytest.approx(sum(b["seconds"] for b in p["breakdown"])) and p["profile_serial_s"] > 0
    assert any("serial" in a for a in p["assumptions"]) and any("evaluation" in a for a in p["assumptions"])


def test_print_campaign_bench(rows, capsys):
    p = projection.project([dict(r, width=1.0, model="resnet18") for r in rows], PAPER)
    projection.print_campaign_bench(rows, p)
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert sum(line.startswith("resnet9") for line in lines) == 2 and "bf16+cl" in out
    cell = 20000 * rows[0]["algorithm1_s"]
    assert f"{cell / 3600:.2f} h ({cell / 60:.1f} min)" in out and "not projected" in out
    assert not math.isnan(p["profile_serial_s"])


# the CPU precision sweep (python -m workflow bench --sweep)

@pytest.mark.slow
def test_the_sweep_times_every_configuration_against_its_own_peak():
    from workflow.bench import sweep

    res = sweep.sweep(widths=(0.0625,), threads=(1,), reps=1, warmup=0, progress=False)
    rows = res["rows"]
    assert sorted((r["precision"], r["method"]) for r in rows) == sorted(
        (p, m) for p in ("fp32", "bf16", "bf16+cl") for m in ("alg1", "nonprivate"))
    assert set(res["peaks_gflops"]) == {"fp32_t1", "bf16_t1"} and min(res["peaks_gflops"].values()) > 0
    for r in rows:
        assert r["median_s"] > 0 and r["step_gflop"] > 0
        assert r["gflops"] == pytest.approx(r["step_gflop"] / r["median_s"])
        peak = res["peaks_gflops"][("fp32" if r["precision"] == "fp32" else "bf16") + "_t1"]
        assert r["fraction_of_peak"] == pytest.approx(r["gflops"] / peak)
        assert r["vs_fp32"] == pytest.approx(1.0) if r["precision"] == "fp32" else r["vs_fp32"] > 0
    assert {"load_1min_before", "load_1min_after", "others_cpu_fraction"} <= set(res["load"])
    assert "of peak" in sweep.table(res)


def test_flops_of_a_step_are_counted_forward_and_backward():
    import torch

    from workflow.bench import sweep

    net = torch.nn.Linear(30, 20, bias=False)
    x, y = torch.randn(8, 30), torch.randint(0, 20, (8,))
    # forward 2*8*30*20; backward: the weight's gradient (x was not asked for): 2*8*30*20 again
    assert sweep.step_flops(net, x, y, torch.nn.functional.cross_entropy) == 2 * (2 * 8 * 30 * 20)


def test_the_load_meter_sees_other_processes_and_a_busy_machine_refuses_results_json(tmp_path):
    import subprocess

    from workflow.bench import sweep

    meter = sweep.LoadMeter().start()
    subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass"],
                   check=True)
    load = meter.stop()
    assert load["others_cpu_s"] >= 0.8  # the child's second of CPU is someone else's
    quiet = dict(load, others_cpu_fraction=0.01, load_1min_before=0.1)
    busy = dict(quiet, others_cpu_fraction=0.3)
    assert sweep.busy_reason(quiet) is None and "30.0%" in sweep.busy_reason(busy)
    # a lagging load average (the benchmark before this one) decides nothing: what others used while it ran does
    assert sweep.busy_reason(dict(quiet, load_1min_before=2.0)) is None
    results = tmp_path / "results" / "cpu" / "bench.json"
    assert "busy" in sweep.refuse_busy_results_json(str(results), dict(load=busy))
    assert sweep.refuse_busy_results_json(str(results), dict(load=quiet)) is None
    assert sweep.refuse_busy_results_json(str(tmp_path / "elsewhere.json"), dict(load=busy)) is None


@pytest.mark.slow
def test_the_core_benchmark_is_a_mode_of_the_one_entry_point(tmp_path):
    """benchmarks/bench_core.py (issue 36, item 4) is a thin caller of `python -m workflow bench --core`: it times
    nothing itself, and what it prints and writes is the CLI's (the rows name the CLI's command)."""
    import ast
    import json
    import os
    import subprocess

    repo = PAPER.parents[1]
    script = repo / "benchmarks" / "bench_core.py"
    imports = {a.name for node in ast.walk(ast.parse(script.read_text())) if isinstance(node, ast.Import)
               for a in node.names}
    imports |= {node.module for node in ast.walk(ast.parse(script.read_text())) if isinstance(node, ast.ImportFrom)}
    assert imports == {"os", "sys", "workflow.__main__"}
    out = tmp_path / "core.json"
    done = subprocess.run([sys.executable, str(script), "--json-out", str(out)], cwd=repo, capture_output=True,
                          text=True, timeout=600, env=dict(os.environ, PYTHONPATH=str(repo)))
    assert done.returncode == 0, done.stderr
    assert "r* solve (cifar10, eps=1):" in done.stdout and "ratio to target" in done.stdout
    assert "Dirichlet mechanism" in done.stdout and "absolute overhead" in done.stdout
    rec = json.loads(out.read_text())
    assert [r["what"] for r in rec["rows"]] == [
        "r* solve (cifar10, eps=1)", "Table 7, 23 printed cells (r* only)",
        "Table 7, full audit table (36 cells, floors, eps at paper r*)", "loss fwd+bwd [250,10], cross-entropy",
        "loss fwd+bwd [250,10], Dirichlet mechanism"]
    assert all(r["seconds"] > 0 for r in rec["rows"]) and rec["rows"][0]["target_s"] == 0.02
    assert rec["provenance"]["config"]["command"] == f"python -m workflow bench --core --json-out {out}"
    assert rec["load"]["wall_s"] > 0
