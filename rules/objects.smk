"""The paper's tables and figures that come from training runs: one notebook job per paper object
(workflow.experiments.OBJECTS), the baselines comparison, the width effect, the summary of every run and the headline
figure (every cell beside the paper, the privacy claim beside the audit). Every paper object has the same notebook
(notebooks/accuracy_vs_eps.ipynb, workflow.report.OBJECT_NOTEBOOK), run with object_name set to each."""


for _name in OBJECTS:

    rule:
        """One table or figure of the paper from its runs, beside the paper's printed values."""
        name:
            _name
        input:
            deps(
                f"notebooks/{OBJECT_NOTEBOOK}.ipynb",
                CODE,
                run_inputs(profile_run_paths(OBJECTS[_name], PROFILE)),  # its runs, and those of `also_show` on disk
            ),
        output:
            report_outputs(object_outputs(_name), _name, ACCURACY, DATASET_NAMES[OBJECTS[_name].dataset],
                           OBJECTS[_name].title),
        log:
            f"{NB_LOGS}/{_name}.log",
        params:
            cmd=papermill(OBJECT_NOTEBOOK, {"object_name": _name, "config": PROFILE_PARAM, "runs_root": "results/runs"},
                          out=_name),
        conda:
            ENV
        shell:
            "{params.cmd}"


rule baselines_comparison:
    """Accuracy against eps for every method run here (Algorithm 1, DP-SGD, tempered-sigmoid DP-SGD,
    LATENT) on MNIST and FashionMNIST, beside the paper's and the cited values."""
    input:
        deps(
            "notebooks/baselines_comparison.ipynb",
            CODE,
            run_inputs([p for o in ("table2_mnist", "table4_fashionmnist") for p in profile_run_paths(OBJECTS[o], PROFILE)]),
        ),
    output:
        *report_outputs(
            [
                f"{RES}/baselines_comparison.csv",
                f"{FIG}/baselines_comparison.png",
                f"{FIG}/baselines_comparison.pdf",
                f"{NB}/baselines_comparison.ipynb",
            ],
            "baselines_comparison",
            BEYOND,
            "Baselines",
            "accuracy against eps, every method",
        ),
    log:
        f"{NB_LOGS}/baselines_comparison.log",
    params:
        cmd=papermill("baselines_comparison", {"config": PROFILE_PARAM, "runs_root": "results/runs"}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule width_effect:
    """Algorithm 1: test accuracy against model width (0.25x, 0.5x on CPU; 1x from the CPU campaign and the gpu
    profile's runs where they exist), FashionMNIST at eps = 2 and MNIST at eps = 1, each also at eps = inf, beside the
    paper's full-width values."""
    input:
        deps(
            "notebooks/width_effect.ipynb",
            CODE,
            run_inputs(profile_run_paths(OBJECTS["table4_fashionmnist"], PROFILE)),
            run_inputs(profile_run_paths(OBJECTS["table2_mnist"], PROFILE)),
        ),
    output:
        *report_outputs(
            [
                f"{RES}/width_effect.csv",
                f"{FIG}/width_effect.png",
                f"{FIG}/width_effect.pdf",
                f"{NB}/width_effect.ipynb",
            ],
            "width_effect",
            BEYOND,
            "Width",
            "Accuracy against width (FashionMNIST, MNIST)",
        ),
    log:
        f"{NB_LOGS}/width_effect.log",
    params:
        cmd=papermill("width_effect", {"config": PROFILE_PARAM, "runs_root": "results/runs"}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule precision_validation:
    """MNIST, Algorithm 1, eps = 1, 0.25x: bf16 + channels_last against fp32, seeds 0-2 each; the difference of
    means with its 95% Welch interval and the adoption rule (within +-0.5 points), and every seed's test curve."""
    input:
        deps(
            "notebooks/precision_validation.ipynb",
            CODE,
            run_inputs(profile_run_paths(OBJECTS["table2_mnist"], PROFILE)),
        ),
    output:
        *report_outputs(
            [
                f"{RES}/precision_validation.csv",
                f"{FIG}/precision_validation.png",
                f"{FIG}/precision_validation.pdf",
                f"{NB}/precision_validation.ipynb",
            ],
            "precision_validation",
            BEYOND,
            "Precision",
            "bf16 + channels_last against fp32",
        ),
    log:
        f"{NB_LOGS}/precision_validation.log",
    params:
        cmd=papermill("precision_validation", {"config": PROFILE_PARAM, "runs_root": "results/runs"}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule dpsgd_step_cost:
    """DP-SGD's step against Algorithm 1's at the paper's width, every implementation available here (the profile's
    bench_dpsgd*.json: python benchmarks/bench_dpsgd.py), and the decision it drives: Table 4's DP-SGD row at full
    width only where the fastest DP-SGD step is within 3x Algorithm 1's (the notebook checks that the profile follows
    it). Made only where the profile has such a bench (DPSGD_COST_TARGETS)."""
    input:
        deps("notebooks/dpsgd_step_cost.ipynb", CODE, DPSGD_BENCHES),
    output:
        *report_outputs(
            [
                f"{RES}/dpsgd_step_cost.csv",
                f"{FIG}/dpsgd_step_cost.png",
                f"{FIG}/dpsgd_step_cost.pdf",
                f"{NB}/dpsgd_step_cost.ipynb",
            ],
            "dpsgd_step_cost",
            BEYOND,
            "DP-SGD cost",
            "DP-SGD's step against Algorithm 1's",
        ),
    log:
        f"{NB_LOGS}/dpsgd_step_cost.log",
    params:
        cmd=papermill("dpsgd_step_cost", {"config": PROFILE_PARAM, "benches": RES}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule runs_summary:
    """Every run of this profile, one row each, beside the paper's accuracy for its cell (width
    always shown); accuracy curves during training."""
    input:
        deps(
            "notebooks/runs_summary.ipynb",
            CODE,
            run_inputs(sorted(TRAIN_RUNS)),
        ),
    output:
        *report_outputs(
            [
                f"{RES}/runs_summary.csv",
                f"{FIG}/runs_accuracy_curves.png",
                f"{FIG}/runs_accuracy_curves.pdf",
                f"{NB}/runs_summary.ipynb",
            ],
            "runs_summary",
            BEYOND,
            "Every run",
            "every run of the profile",
        ),
    log:
        f"{NB_LOGS}/runs_summary.log",
    params:
        cmd=papermill("runs_summary", {"runs_dir": f"results/runs/{PROFILE.name}"}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule headline:
    """The headline figure: every paper cell run here as ours - paper with its 95% interval and verdict (left), each
    audited model's claimed epsilon against its audited lower bound (right); headline_cells.csv is the README's
    table of the cells, privacy_cost.csv the privacy cost at the paper's width (ours beside the paper's),
    headline_audit.csv every point of the right panel."""
    input:
        deps(
            "notebooks/headline.ipynb",
            CODE,
            run_inputs(sorted({p for o in OBJECTS.values() if o.paper_object is None
                               for p in profile_run_paths(o, PROFILE)})),
            f"{RES}/audit_canary.csv",
            f"{RES}/audit_subspace.csv",
            f"{RES}/audit_first_layer.csv",
            f"{RES}/audit_control.csv",
            BN_TARGETS[:1],
            ONE_RUN_TARGETS[:1],
        ),
    output:
        *report_outputs(
            [
                f"{RES}/headline_cells.csv",
                f"{RES}/privacy_cost.csv",
                f"{RES}/headline_audit.csv",
                f"{FIG}/headline.png",
                f"{FIG}/headline.pdf",
                f"{NB}/headline.ipynb",
            ],
            "headline",
            BEYOND,
            "Headline",
            "the headline: accuracy and privacy",
        ),
    log:
        f"{NB_LOGS}/headline.log",
    params:
        cmd=papermill("headline", {"config": PROFILE_PARAM, "runs_root": "results/runs"}),
    conda:
        ENV
    shell:
        "{params.cmd}"
