"""Paper objects, profiles and the tables beside the paper (workflow.experiments, workflow.report, workflow.paper)."""

import math

import pandas as pd
import pytest

from dirdp.presets import get_preset
from dirdp.training import make_config
from workflow import paper, report
from workflow.report import labels as report_labels
from workflow.experiments import OBJECTS, Profile, Run, get_object

PROFILES = ["paper", "cpu", "quick", "smoke", "gpu"]


def test_printed_this_work_cells_are_exactly_each_objects_grid():
    for obj in OBJECTS.values():
        if obj.axis == "lr":
            assert paper.accuracy(obj.name).empty  # Figure 2 prints no numbers
            continue
        printed = paper.accuracy(obj.paper_object or obj.name)
        mine = printed[(printed.label == "paper") & (printed.method == "Algorithm 1")]
        if obj.axis == "q":
            assert sorted(mine.q) == sorted(obj.q_grid) and set(mine.eps) == set(obj.eps)
        else:
            assert sorted(mine.eps) == sorted(obj.eps), obj.name
        assert mine["std"].isna().tolist() == [math.isinf(e) for e in mine.eps]  # no std printed at eps = inf


def test_cited_numbers_are_labelled_and_never_this_work():
    acc = paper.accuracy()
    assert set(acc.label) == {"paper", "paper, cited"}
    cited = acc[acc.label == "paper, cited"]
    assert not cited.source.str.startswith("This work").any()
    assert acc[acc.label == "paper"].source.str.startswith("This work").all()


def test_run_tags_are_unique_and_name_what_varies():
    runs = Profile.load("config/paper.yaml").all_runs()
    assert len(runs) == len({r.tag + r.dataset for r in runs.values()})
    assert Run("cifar10", 4.0, 2, q=0.01).tag == "alg1_q0.01_eps4_seed2"
    assert Run("cifar10", math.inf, 0, optimizer="adam").tag == "alg1_adam_epsinf_seed0"
    assert Run("cifar10", 1.0, 9, alpha=0.1, lr=0.025).tag == "alg1_alpha0.1_lr0.025_eps1_seed9"


def test_paper_profile_is_the_papers_grid():
    prof = Profile.load("config/paper.yaml")
    assert len(prof.runs("table2_mnist")) == 5 * (5 + 4 + 4) and len(prof.runs("fig2_learning_rate_vs_alpha")) == 105 * 10
    assert {r.method for r in prof.runs("table4_fashionmnist")} == {"alg1", "dpsgd", "tempered", "latent"}
    assert {r.method for r in prof.runs("table5_svhn")} == {"alg1", "dpsgd"}
    assert prof.runs("table1_cifar10") == prof.runs("fig1b_cifar10_accuracy_vs_eps")
    assert {r.q for r in prof.runs("table9_sampling_rate")} == {0.001, 0.01, 0.02, 0.04}
    assert {r.optimizer for r in prof.runs("table10_adam")} == {"adam"}


@pytest.mark.parametrize("name", PROFILES)
def test_profile_train_args_give_the_protocol_with_only_the_profiles_changes(name):
    from dirdp.__main__ import build_parser

    prof = Profile.load(f"config/{name}.yaml")
    for path, run in list(prof.all_runs().items())[:80]:
        args = build_parser().parse_args(["train", *prof.train_args(run), "--out", path])
        cfg = make_config(args.dataset, args.eps, args.seed, method=args.method, steps=args.steps, q=args.q,
                          alpha=args.alpha,
                          lr=args.lr, optimizer=args.optimizer, width=args.width, train_subset=args.train_subset)
        preset = get_preset(run.dataset)
        t = prof.training
        scaled = run.method in ("alg1", "dpsgd")  # Papernot's CNN and LATENT run as published
        width = (run.width or t.get("width", 1.0)) if scaled else 1.0  # a run's own width (extra runs) wins
        assert cfg.steps == t.get("steps", preset.steps) and cfg.width == width
        assert cfg.q == run.q if run.q is not None else cfg.q == t.get("q", preset.q)
        assert cfg.alpha == (run.alpha or 3.0) and cfg.train_subset == t.get("train_subset")
        assert cfg.eps == run.eps and cfg.seed == run.seed and cfg.method == run.method


def test_cpu_profile_keeps_the_papers_privacy_protocol():
    prof = Profile.load("config/cpu.yaml")
    for run in prof.all_runs().values():
        args = prof.train_args(run)
        assert "--steps" not in args and "--q" not in args and "--train-subset" not in args
        if run.method in ("alg1", "dpsgd"):
            wide = {"_w0.5_": "0.5", "_w1_": "1.0"}  # the campaign's wider runs say so in their tags
            assert args[args.index("--width") + 1] == next((w for tag, w in wide.items() if tag in run.tag), "0.25")
            # a reduced-width run takes one thread (one run per core); the full-width runs share one layout of the
            # two cores: one run per core or one two-thread run (config/cpu.yaml, threads_by_width)
            full = args[args.index("--width") + 1] == "1.0"
            assert prof.threads(run) in ((1, 2) if full else (1,))
        else:
            assert "--width" not in args
    assert len({prof.threads(r) for r in prof.all_runs().values() if r.method == "alg1" and "_w1_" in r.tag}) == 1


def test_status_rules():
    def status(row, *, width, reduced_protocol=False):
        """The row's status key (report.status) and its sentence (labels.status, at ``width``)."""
        key = report.status(row, reduced_protocol=reduced_protocol)
        return key, report_labels.status(dict(row, status=key, width=width, norm="batch", method="Algorithm 1"))

    # one run 0.31 below 99.37 +- 0.059: [-0.31 -+ 2.7764 x 0.059 x 1.0954] = [-0.489, -0.131], shown, no verdict
    row = dict(paper=99.37, paper_std=0.059, n=1, **report.estimate(99.06, None, 1, 99.37, 0.059))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((-0.489, -0.131), abs=1e-3)
    assert row["verdict"] == "one_run"
    assert status(row, width=0.25) == ("compared", "no verdict (n = 1) (reduced width)")
    # three seeds 99.06 +- 0.10 against it: Welch (df = 2.9) [-0.518, -0.102] decides
    row = dict(paper=99.37, paper_std=0.059, n=3, **report.estimate(99.06, 0.10, 3, 99.37, 0.059))
    assert row["verdict"] == "below_within" and (row["interval"], row["interval_df"]) == ("welch", 2.9)
    assert status(row, width=0.25) == ("compared", "below the paper, within 1 point (reduced width)")
    row = dict(paper=99.37, paper_std=0.059, n=3, **report.estimate(99.45, 0.05, 3, 99.37, 0.059))  # [-0.02, 0.18]
    assert row["verdict"] == "within"
    assert status(row, width=1.0) == ("compared", "within 1 point of the paper")
    row = dict(paper=99.37, paper_std=None, n=1, **report.estimate(99.06, None, 1, 99.37, None))
    assert status(row, width=1.0) == ("no_spread", "no spread printed")
    assert status(row, width=1.0, reduced_protocol=True) == ("not_comparable", "not comparable (reduced protocol)")


def test_object_table_without_runs_shows_the_paper_and_says_why(tmp_path):
    prof = Profile.load("config/cpu.yaml")
    table = report.object_table(get_object("table5_svhn"), prof, runs_root=str(tmp_path))
    mine = table[table.method == "Algorithm 1"]
    assert len(mine) == 7 and mine["mean"].isna().all()
    assert (mine.status == "not_run").all() and (mine.origin == "paper").all()
    assert mine.why.str.startswith("not in the 'cpu' profile").all()  # the reason alone: no "not run here (" wrapper
    assert all(report_labels.status(r).startswith("not run here (not in the 'cpu' profile")
               for r in mine.to_dict("records"))

    def why(table):
        alg1 = table[table.method == "Algorithm 1"]
        assert (alg1.status == "not_run").all()
        return dict(zip(alg1.eps, alg1.why)), dict(zip(alg1.eps, (report_labels.status(r) for r in
                                                                   alg1.to_dict("records"))))

    table2 = report.object_table(get_object("table2_mnist"), prof, runs_root=str(tmp_path))
    reason, status = why(table2)
    assert reason[1.0] == reason[0.5] == "result file missing: run the DAG"  # eps = 0.5: declared at full width
    assert status[1.0] == "not run here (result file missing: run the DAG)"
    assert status[0.5] == "not run here (result file missing: run the DAG)"
    quick = Profile.load("config/quick.yaml")  # a profile whose grid leaves eps = 0.5 out
    table2 = report.object_table(get_object("table2_mnist"), quick, runs_root=str(tmp_path))
    reason, status = why(table2)
    assert reason[0.5] == "not in the 'quick' profile's grid"
    assert status[0.5] == "not run here (not in the 'quick' profile's grid)"


def _fake_run(root, profile, tag, *, dataset="fashionmnist", eps=2.0, seed=0, width=0.25, test=85.0, norm=None):
    """A result JSON with the fields the tables read (as python -m dirdp train writes them)."""
    import json
    from pathlib import Path

    preset = get_preset(dataset)
    path = Path(root) / profile / dataset / f"{tag}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(
        dataset=dataset, method="alg1", eps_target=eps if math.isfinite(eps) else "inf", seed=seed, q=preset.q,
        alpha=3.0, steps=preset.steps, width=width, rstar=0.47, epsilon=eps if math.isfinite(eps) else "inf",
        test_accuracy=test, val_accuracy=None, wall_time_s=1.0,
        width_label="full width" if width == 1.0 else f"reduced width ({width:g}x channels)",
        **({} if norm is None else {"norm": norm}),  # files before the field existed have none
        provenance=dict(config=dict(lr=0.1, optimizer="sgd", train_subset=None), device="cpu", git_commit="abc"))))


def test_a_cell_shows_one_row_per_width_with_the_gpu_runs_and_welch_for_means(tmp_path):
    for seed, acc in enumerate([85.3, 85.9, 85.0]):
        _fake_run(tmp_path, "cpu", f"alg1_eps2_seed{seed}", seed=seed, test=acc)
    _fake_run(tmp_path, "cpu", "alg1_w0.5_eps2_seed0", width=0.5, test=88.0)
    for seed, acc in enumerate([91.0, 91.2]):
        _fake_run(tmp_path, "gpu", f"alg1_eps2_seed{seed}", seed=seed, width=1.0, test=acc)
    prof = Profile.load("config/cpu.yaml")
    assert prof.config["also_show"] == ["gpu"]
    table = report.object_table(get_object("table4_fashionmnist"), prof, runs_root=str(tmp_path))
    cell = table[(table.method == "Algorithm 1") & (table.eps == 2.0)].set_index("width", drop=False)
    assert list(cell.index) == [1.0, 0.5, 0.25] and list(cell.n) == [2, 1, 3]
    assert list(cell.runs) == ["gpu", "cpu", "cpu"]
    full, half, quarter = cell.loc[1.0], cell.loc[0.5], cell.loc[0.25]
    # full width, two seeds (91.0, 91.2: std 0.1414, unrounded) against 91.13 +- 0.18: va = 0.02 / 2 = 0.01,
    # vb = 0.18^2 / 5 = 0.00648; df = 0.01648^2 / (0.01^2 / 1 + 0.00648^2 / 4) = 2.458,
    # t(0.975, 2.458) = 3.619, half = 3.619 x sqrt(0.01648) = 0.4646; diff -0.03 -> [-0.4946, 0.4346]
    assert set(cell.origin) == {"here"} and set(cell.status) == {"compared"}
    assert (full.verdict, full.status) == ("within", "compared") and full.setting.endswith("full width")
    assert report_labels.status(full.to_dict()) == "within 1 point of the paper"
    assert (full.ci_low, full.ci_high) == pytest.approx((-0.4946, 0.4346), abs=1e-3)
    assert (full.interval, full.interval_df) == ("welch", 2.5)
    assert report_labels.interval(full.interval, full.interval_df) == "Welch (df = 2.5)"
    # 0.5x, one run 88.0: 3.13 below, [-3.6775, -2.5825] (the paper's spread only)
    assert (half.verdict, half.interval) == ("one_run", "paper_spread") and pd.isna(half.interval_df)
    assert report_labels.status(half.to_dict()) == "no verdict (n = 1) (reduced width)"
    assert report_labels.interval(half.interval) == "paper spread only (n = 1)"
    assert quarter.verdict == "below" and quarter.ci_high < 0
    assert report_labels.status(quarter.to_dict()) == "below the paper (reduced width)"
    shown = report.show(table[(table.method == "Algorithm 1") & (table.eps == 2.0)])  # what a notebook prints
    assert "below the paper (reduced width)" in shown and "run here" in shown and "compared" not in shown
    assert quarter["mean"] == pytest.approx(85.4, abs=1e-3) and quarter.seeds == "0 1 2"
    fig = report.figure(get_object("table4_fashionmnist"), table)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert {"Algorithm 1 (run here, full width)", "Algorithm 1 (run here, 0.5x width)",
            "Algorithm 1 (run here, 0.25x width)"} <= set(labels)


def test_a_profile_that_shows_a_missing_profile_is_an_error(tmp_path):
    prof = Profile.from_config({"profile": "x", "objects": ["table2_mnist"], "also_show": ["nope"]})
    with pytest.raises(ValueError, match="nope"):
        report.object_table(get_object("table2_mnist"), prof, runs_root=str(tmp_path))


def test_a_groupnorm_extra_run_is_its_own_run_with_its_own_tag_and_flag():
    from workflow.experiments import Profile

    prof = Profile.from_config(dict(profile="t", objects=["table2_mnist"], training=dict(width=0.25, seeds=1),
                                    grids=dict(table2_mnist=dict(eps=[1], baselines={},
                                                                 extra=[{"eps": 1, "norm": "group"}]))))
    runs = prof.runs("table2_mnist")
    assert [r.tag for r in runs] == ["alg1_eps1_seed0", "alg1_gn_eps1_seed0"]
    args = prof.train_args(runs[1])
    assert args[args.index("--norm") + 1] == "group" and "--norm" not in prof.train_args(runs[0])
    with pytest.raises(ValueError) as err:
        Profile.from_config(dict(profile="t", objects=["table2_mnist"],
                                 grids=dict(table2_mnist=dict(extra=[{"eps": 1, "norm": "layer"}]))))
    assert str(err.value) == "profile 't': grids.table2_mnist.extra.0.norm: 'layer' is not one of ['batch', 'group']"


def test_the_profiles_precision_reaches_algorithm_1_runs_that_name_none_and_no_baseline():
    def runs(training=None, **grid):
        prof = Profile.from_config(dict(profile="t", objects=["table2_mnist"],
                                        training=dict(width=0.25, seeds=1, **(training or {})),
                                        grids=dict(table2_mnist=dict(eps=[1], baselines={"tempered": [1]}, **grid))))
        return prof, prof.runs("table2_mnist")

    prof, got = runs(dict(precision="bf16"), extra=[{"eps": 2}, {"eps": 4, "precision": "fp32"}])
    assert [r.tag for r in got] == ["alg1_bf16_eps1_seed0", "tempered_eps1_seed0", "alg1_bf16_eps2_seed0",
                                    "alg1_eps4_seed0"]
    assert [("--bf16" in prof.train_args(r), "--channels-last" in prof.train_args(r)) for r in got] == [
        (True, True), (False, False), (True, True), (False, False)]
    # a grid that says fp32 keeps its own cells fp32; its extras still take the profile's precision
    _, got = runs(dict(precision="bf16"), precision="fp32", extra=[{"eps": 2}])
    assert [r.tag for r in got] == ["alg1_eps1_seed0", "tempered_eps1_seed0", "alg1_bf16_eps2_seed0"]
    _, got = runs(extra=[{"eps": 2}])  # no precision anywhere: fp32, as before
    assert [r.tag for r in got] == ["alg1_eps1_seed0", "tempered_eps1_seed0", "alg1_eps2_seed0"]
    with pytest.raises(ValueError) as err:
        runs(dict(precision="fp16"))
    assert str(err.value) == "profile 't': training.precision: 'fp16' is not one of ['fp32', 'bf16', None]"


def test_every_committed_cpu_result_has_the_precision_its_profile_run_says():
    """The cpu profile adopted bf16 for new runs (issue 31); the runs it trained in fp32 before stay fp32: the
    precision each run of the profile declares (its tag) is the one its committed result JSON records."""
    from pathlib import Path

    import json

    from dirdp.run_result import precision

    repo = Path(__file__).resolve().parents[1]
    prof = Profile.load(repo / "config/cpu.yaml")
    assert prof.precision == "bf16"
    checked = 0
    for path, run in prof.all_runs().items():
        if (repo / path).exists():
            assert precision(json.loads((repo / path).read_text())) == (run.precision or "fp32"), path
            checked += 1
    assert checked >= 20  # the committed campaign: fp32 grid cells and the bf16 validation seeds


def test_a_groupnorm_run_is_its_own_row_beside_the_papers_model_and_not_in_its_figure_line(tmp_path):
    for seed, acc in enumerate([99.0, 99.1]):
        _fake_run(tmp_path, "t", f"alg1_eps1_seed{seed}", dataset="mnist", eps=1.0, seed=seed, test=acc)
    _fake_run(tmp_path, "t", "alg1_gn_eps1_seed0", dataset="mnist", eps=1.0, test=97.0, norm="group")
    prof = Profile.from_config(dict(profile="t", objects=["table2_mnist"], training=dict(width=0.25, seeds=2),
                                    grids=dict(table2_mnist=dict(eps=[1], baselines={},
                                                                 extra=[{"eps": 1, "norm": "group"}]))))
    table = report.object_table(get_object("table2_mnist"), prof, runs_root=str(tmp_path))
    cell = table[(table.method == "Algorithm 1") & (table.eps == 1.0) & (table.origin == "here")]
    assert list(cell.norm) == ["batch", "group"] and list(cell.n) == [2, 1]
    assert list(cell["mean"]) == [pytest.approx(99.05), 97.0]
    gn = cell.iloc[1]
    assert (gn.status, gn.verdict) == ("compared", "one_run") and gn.setting.endswith("GroupNorm")  # no suffix
    assert report_labels.status(gn.to_dict()).endswith("(GroupNorm, not the paper's model)")
    assert not report_labels.status(cell.iloc[0].to_dict()).endswith("(GroupNorm, not the paper's model)")
    assert list(report.paper_model(cell).norm) == ["batch"]
    fig = report.figure(get_object("table2_mnist"), table)
    labels = {t.get_text() for t in fig.axes[0].get_legend().get_texts()}
    assert {"Algorithm 1 (run here, 0.25x width)", "Algorithm 1 (run here, 0.25x width, GroupNorm)"} <= labels
