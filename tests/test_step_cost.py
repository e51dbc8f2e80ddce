"""The DP-SGD step cost (workflow.report.step_cost, notebooks/dpsgd_step_cost.ipynb): a bench record's rows, the
full-width decision, the figure, and that the cpu profile follows its committed bench."""

import dataclasses
import json
import math
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from workflow import experiments, paper  # noqa: E402
from workflow.report import step_cost  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def _bench(dpsgd_s: float, *, failed: bool = False) -> dict:
    rows = [dict(variant="alg1 bf16+cl (BatchNorm)", median_s_per_step=2.0, over_algorithm1=1.0, times_s=[2.1, 2.0, 1.9]),
            dict(variant="opacus hooks bf16", median_s_per_step=dpsgd_s, over_algorithm1=dpsgd_s / 2.0,
                 times_s=[dpsgd_s, dpsgd_s, dpsgd_s])]
    if failed:
        rows.append(dict(variant="opacus ghost fp32", error="RuntimeError: no ghost here"))
    return dict(rows=rows, reference="alg1 bf16+cl (BatchNorm)", fastest_dpsgd="opacus hooks bf16",
                provenance=dict(device="cpu: test", config=dict(threads=1, width=1.0, batch=250)))


def test_rows_give_the_ratio_the_run_hours_and_why_a_variant_failed():
    t = step_cost.table(_bench(7.0, failed=True), steps=9600, source="b.json")
    assert list(t.family) == [step_cost.ALG1, step_cost.DPSGD, step_cost.DPSGD]
    hooks = t[t.variant == "opacus hooks bf16"].iloc[0]
    assert hooks.over_algorithm1 == 3.5 and hooks.fastest_dpsgd
    assert hooks.run_hours == pytest.approx(7.0 * 9600 / 3600)  # 18.7 h of steps
    ghost = t[t.variant == "opacus ghost fp32"].iloc[0]
    assert math.isnan(ghost.median_s) and ghost.error.startswith("RuntimeError") and ghost.times_s == ""


def test_each_variant_the_bench_times_has_its_method_declared():
    """The bench's variants are those whose method step_cost declares (no name is read for its method)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_dpsgd", REPO / "benchmarks" / "bench_dpsgd.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert list(bench.VARIANTS) == list(step_cost.VARIANT_METHODS)
    assert step_cost.family(bench.REFERENCE) == step_cost.ALG1
    with pytest.raises(ValueError, match="not a variant of benchmarks/bench_dpsgd.py"):
        step_cost.family("alg1 fp16")


@pytest.mark.parametrize("dpsgd_s, width", [(5.9, "full"), (6.0, "full"), (6.1, "reduced")])
def test_full_width_only_within_three_algorithm_1_steps(dpsgd_s, width):
    assert step_cost.decision(step_cost.table(_bench(dpsgd_s), steps=9600)) == (width, pytest.approx(dpsgd_s / 2))


def test_no_dpsgd_variant_that_ran_means_reduced_width():
    rec = _bench(5.0)
    rec["rows"][1] = dict(variant="opacus hooks bf16", error="ImportError: opacus")
    assert step_cost.decision(step_cost.table(rec, steps=9600)) == ("reduced", None)


def test_a_bench_without_algorithm_1_is_refused_with_what_to_do():
    rec = _bench(5.0)
    rec["rows"] = rec["rows"][1:]
    with pytest.raises(ValueError, match="no Algorithm-1 step timed.*bench_dpsgd.py"):
        step_cost.table(rec, steps=9600, source="b.json")


def test_the_figure_marks_algorithm_1_and_the_threshold():
    fig, ax = plt.subplots()
    step_cost.draw(ax, step_cost.table(_bench(7.0, failed=True), steps=9600), steps=9600)
    lines = sorted(line.get_xdata()[0] for line in ax.get_lines())
    claimed = paper.EPOCH_SECONDS_DPSGD / paper.EPOCH_SECONDS_ALG1
    assert lines == sorted([2.0, 2.0 * claimed, 2.0 * step_cost.WITHIN])  # Algorithm 1's step, the paper's ratio, 3x
    assert any(f"the paper: DP-SGD's epoch {claimed:.2f}x" in t.get_text() for t in ax.get_legend().get_texts())
    assert len(ax.patches) == 2  # a bar per variant that ran; the failed one is named instead
    assert any("did not run: RuntimeError" in t.get_text() for t in ax.texts)
    assert any(t.get_text() == "3.50x, 18.7 h" for t in ax.texts)
    plt.close(fig)


def test_the_cpu_profile_follows_its_committed_bench():
    """Table 4's DP-SGD runs at full width only where the newest committed bench says its step allows it."""
    benches = sorted((REPO / "results" / "cpu").glob("bench_dpsgd*.json"))
    assert benches, "results/cpu/bench_dpsgd*.json: the decision's evidence is committed"
    t = step_cost.table(json.loads(benches[-1].read_text()), steps=9600, source=benches[-1].name)
    prof = experiments.Profile.load(REPO / "config" / "cpu.yaml")
    assert step_cost.profile_widths(prof), "the cpu profile runs Table 4's DP-SGD row"
    assert "cpu: Table 4's DP-SGD row at width(s)" in step_cost.check_profile(prof, t)


def test_a_profile_training_dpsgd_at_full_width_against_its_bench_is_refused():
    prof = experiments.Profile.load(REPO / "config" / "cpu.yaml")
    prof = dataclasses.replace(prof, training={**prof.training, "width": 1.0})  # DP-SGD at the paper's width
    slow, fast = (step_cost.table(_bench(s), steps=9600, source="b.json") for s in (8.0, 5.0))
    with pytest.raises(ValueError, match=r"at width\(s\) 1x; the bench \(b.json\) allows reduced width .*4.00x"):
        step_cost.check_profile(prof, slow)
    assert "allows full width (fastest DP-SGD step 2.50x" in step_cost.check_profile(prof, fast)
