"""Every table and figure: one notebook job each, executed by papermill (rules/common.smk: papermill), declared once in
NOTEBOOKS below. A job's line says what it is (its docstring, shown by `snakemake --list-rules`), the files it makes
(under the profile's folders: a table results/<profile>/X.csv, a figure figures/<profile>/X.png and .pdf, its
executed notebook results/<profile>/notebooks/<job>.ipynb), where `snakemake --report` files them, what it reads
besides its notebook and the code, and its parameters. Everything else derives from that line: the rule, the targets
of `rule all`, the inputs of the index. The paper's objects (workflow.experiments.OBJECTS) share one notebook
(notebooks/accuracy_vs_eps.ipynb, workflow.report.OBJECT_NOTEBOOK), run with object_name set to each."""

from workflow.audit.released import RELEASED_MODELS_N


RUN_PARAMS = {"config": PROFILE_PARAM, "runs_root": "results/runs"}
ONE_RUN = config.get("audit_one_run") or {}
NOTEBOOKS = {
    **{name: Notebook(
        f"{obj.title}: the paper's table or figure from its runs, beside the paper's printed values.",
        made(name, f"{name}.csv", *([obj.figures[0] if obj.figures else name] if draws(obj) else [])),
        (ACCURACY, DATASET_NAMES[obj.dataset], obj.title),
        run_inputs(profile_run_paths(obj, PROFILE)),  # its runs, and those of `also_show` on disk
        {"object_name": name, **RUN_PARAMS}, OBJECT_NOTEBOOK) for name, obj in OBJECTS.items()},
    "baselines_comparison": Notebook(
        """Accuracy against eps for every method run here (Algorithm 1, DP-SGD, tempered-sigmoid DP-SGD,
        LATENT) on MNIST and FashionMNIST, beside the paper's and the cited values.""",
        made("baselines_comparison", "baselines_comparison.csv"),
        (BEYOND, "Baselines", "accuracy against eps, every method"),
        object_runs("table2_mnist", "table4_fashionmnist"), RUN_PARAMS),
    "width_effect": Notebook(
        """Algorithm 1: test accuracy against model width (0.25x, 0.5x on CPU; 1x from the CPU campaign and the gpu
        profile's runs where they exist), FashionMNIST at eps = 2 and MNIST at eps = 1, each also at eps = inf, beside
        the paper's full-width values.""",
        made("width_effect", "width_effect.csv", "width_effect"),
        (BEYOND, "Width", "Accuracy against width (FashionMNIST, MNIST)"),
        object_runs("table4_fashionmnist") + object_runs("table2_mnist"), RUN_PARAMS),
    "precision_validation": Notebook(
        """MNIST, Algorithm 1, eps = 1, 0.25x: bf16 + channels_last against fp32, seeds 0-2 each; the difference of
        means with its 95% Welch interval and the adoption rule (within +-0.5 points), and every seed's test curve.
        Made where the profile trains both (the cpu profile: its fp32 grid and the bf16 extras).""",
        made("precision_validation", "precision_validation.csv", "precision_validation"),
        (BEYOND, "Precision", "bf16 + channels_last against fp32"),
        object_runs("table2_mnist"), RUN_PARAMS,
        made={Run("mnist", 1.0, 0, precision=p).path(PROFILE.name) for p in (None, "bf16")} <= set(RUNS)),
    "dpsgd_step_cost": Notebook(
        """DP-SGD's step against Algorithm 1's at the paper's width, every implementation available here (the
        profile's bench_dpsgd*.json: python benchmarks/bench_dpsgd.py, by hand, on a quiet machine; the DAG reads it
        and never makes it), and the decision it drives: Table 4's DP-SGD row at full width only where the fastest
        DP-SGD step is within 3x Algorithm 1's (the notebook checks that the profile follows it). Made only where the
        profile has such a bench.""",
        made("dpsgd_step_cost", "dpsgd_step_cost.csv", "dpsgd_step_cost"),
        (BEYOND, "DP-SGD cost", "DP-SGD's step against Algorithm 1's"),
        DPSGD_BENCHES, {"config": PROFILE_PARAM, "benches": RES}, made=bool(DPSGD_BENCHES)),
    "runs_summary": Notebook(
        """Every run of this profile, one row each, beside the paper's accuracy for its cell (width
        always shown); accuracy curves during training.""",
        made("runs_summary", "runs_summary.csv", "runs_accuracy_curves"),
        (BEYOND, "Every run", "every run of the profile"),
        run_inputs(sorted(TRAIN_RUNS)), {"runs_dir": f"results/runs/{PROFILE.name}"}),
    "table6_table7_rstar": Notebook(
        """Tables 6 and 7: r* of Eq. (1) by Brent's method on Theorem 10, beside the paper's values;
        the floor lim r->0 h(r) per protocol; what orders beyond the cap certify for the "—" cells, and kappa there;
        h(r) curves.""",
        made("table6_table7_rstar", "table6.csv", "table7.csv", "table7_high_orders.csv", "h_of_r"),
        (THEORY, "Tables 6 and 7: r*", "Tables 6 and 7")),
    "theorem11_kappa_variance": Notebook(
        """Theorem 11 by Monte Carlo (Eqs. 3-5, with SEs and z-scores) and kappa / Var against alpha
        with the regimes of Appendix C.1.""",
        made("theorem11_kappa_variance", "theorem11_mc.csv", "theorem11_kappa_variance"),
        (THEORY, "Theorem 11", "Theorem 11"), [], config["theorem11"]),
    "explore_kappa": Notebook(
        """The kappa explorer (dirdp.explore): kappa, E[loss], Var[loss] and gamma_eff against s_y, h(r), kappa and
        Var against alpha at a fixed eps, the mechanism on the simplex, the training-speed consequence beside the
        committed MNIST runs; executed once headless, so that its executed copy shows every view as a static image.""",
        made("explore_kappa"), (THEORY, "The kappa explorer", "kappa explorer"),
        sorted(glob.glob("results/runs/cpu/mnist/alg1_eps*_seed0.json")), config["explore_kappa"]),
    "audit_privacy": Notebook(
        """The privacy audit (dirdp.audit): canary epsilon lower bounds for Algorithm 1, DP-SGD and LATENT at the same
        claimed eps, and membership inference at matched claimed eps.""",
        made("audit_privacy", "audit_canary.csv", "audit_membership.csv"),
        (AUDIT, "Canaries, membership", "canary bounds and membership inference"),
        [], {**subset(config["audit"], "claimed_eps", "canary", "latent_trials", "membership"),
             "profile": PROFILE.name}),
    "audit_reconstruction": Notebook(
        """Reconstruction of private images from one update (dirdp.audit): analytic on a dense first layer, under
        Algorithm 1 and DP-SGD at the same claimed eps; gradient inversion on the conv models.""",
        made("audit_reconstruction", "audit_reconstruction.csv", "audit_reconstruction"),
        (AUDIT, "Reconstruction", "reconstruction from one update"),
        [], {**subset(config["audit"], "claimed_eps", "reconstruction_images", "dense_batch_sizes",
                                "inversion"),
             "profile": PROFILE.name}),
    "audit_released_models": Notebook(
        """Membership inference (logit margin) on every image model this profile released: each row read from its
        run's record (X.json.membership, dirdp.audit.released_model_row) where that was made for the same weights, n,
        seed and code, else computed from the weights and recorded; a run with neither (full-width weights are not in
        git) is listed as not audited.""",
        made("audit_released_models", "audit_released_models.csv"),
        (AUDIT, "Released models", "membership inference on the released models"),
        run_inputs(sorted(p for p, run in RUNS.items() if methods.spec(run.method).images)),
        {"profile": PROFILE.name, "runs_dir": f"results/runs/{PROFILE.name}",
         "n": (config.get("audit_released_models") or {}).get("n", RELEASED_MODELS_N), "store": True}),
    "audit_subspace": Notebook(
        """The white-box subspace canary test (workflow.audit.subspace) on the paper's model families, BatchNorm
        replaced by GroupNorm: Algorithm 1 at the paper's r* for eps = 1, DP-SGD at the same claimed eps as the
        control, add/remove and replace-one, one step at q = 1 and the MNIST q over T steps; the residual of each
        update outside the span of the auditor's records' logit Jacobians, and the epsilon lower bound it
        certifies.""",
        made("audit_subspace", "audit_subspace.csv"),
        (AUDIT, "Subspace canary test", "white-box subspace canary test"),
        [], {**config["audit_subspace"], "profile": PROFILE.name}),
    "audit_batchnorm": Notebook(
        """The BatchNorm channel (dirdp.audit.batchnorm) of the profile's released MNIST eps = 1 model: one record's
        influence on the other records' releases (Renyi divergence beside Lemma 9's one-record budget), the running
        statistics as a noise-free channel (white box, q = 1), last-batch membership from the first running mean,
        and the accuracy of the --norm group twin where the profile trains it. Made where the profile trains the
        released model.""",
        made("audit_batchnorm", "audit_batchnorm.csv", "audit_bn_influence.csv", "audit_bn_influence"),
        (AUDIT, "BatchNorm channel", "BatchNorm channel"),
        run_inputs([BN_RELEASED] + ([BN_GROUPNORM] if BN_GROUPNORM in RUNS else [])),
        {**config["audit_batchnorm"], "profile": PROFILE.name, "runs_dir": f"results/runs/{PROFILE.name}",
         "released": os.path.relpath(BN_RELEASED, f"results/runs/{PROFILE.name}")[:-5],
         "groupnorm": os.path.relpath(BN_GROUPNORM, f"results/runs/{PROFILE.name}")[:-5]},
        made=BN_RELEASED in RUNS),
    "audit_paper_model": Notebook(
        """The audit on the paper's own model at the paper's protocol (workflow.audit.first_layer): the exact
        final-model test on Inception with BatchNorm (a zero record never moves the bias-free first convolution nor
        the first running mean; trials resumed from results/<profile>/audit_first_layer_trials.jsonl, the cpu
        profile's committed), and DP-SGD at the same claim audited with the most powerful every-update statistic (the
        control with power).""",
        made("audit_paper_model", "audit_first_layer.csv", "audit_control.csv", "audit_paper_model"),
        (AUDIT, "Paper's model, final model", "the exact final-model test on the paper's model and the DP-SGD control"),
        [], {**config["audit_paper_model"], "profile": PROFILE.name,
             "records": f"{RES}/audit_first_layer_trials.jsonl"}),
    "audit_one_run": Notebook(
        """The one-run audit (Steinke, Nasr and Jagielski 2023; workflow.audit.one_run) of the profile's runs with
        canaries (audit_one_run: runs; each trained by the train rule with its canaries' scores in its result JSON):
        the epsilon lower bound of the white-box and black-box scores over the profile's grid of guesses, against
        each run's own add/remove claim; DP-SGD on the same canaries is the control. Made where the profile declares
        such runs.""",
        made("audit_one_run", "audit_one_run.csv", "audit_one_run"),
        (AUDIT, "One-run audit", "the one-run audit of real trainings"),
        run_inputs(sorted(ONE_RUN_RUNS)),
        {"profile": PROFILE.name, "runs": sorted(ONE_RUN_RUNS), "ks": ONE_RUN.get("ks", [20, 50, 100]),
         "confidence": ONE_RUN.get("confidence", 0.95)}, made=bool(ONE_RUN_RUNS)),
}
NOTEBOOKS["audit_figures"] = Notebook(
    """The audits' figures drawn from their tables, redrawn without rerunning an audit: the canary bounds
    (audit_canary.csv) and the subspace test's residuals (audit_subspace.csv).""",
    made("audit_figures", "audit_canary_bounds", "audit_subspace_ranges"),
    (AUDIT, "Audit figures", "the canary bounds and the subspace residuals"),
    [f"{RES}/audit_canary.csv", f"{RES}/audit_subspace.csv"], {"profile": PROFILE.name},
    made=NOTEBOOKS["audit_privacy"].made and NOTEBOOKS["audit_subspace"].made)
# The headline reads the audits' tables that the profile makes.
_AUDITS = ("audit_canary", "audit_subspace", "audit_first_layer", "audit_control", "audit_batchnorm", "audit_one_run")
NOTEBOOKS["headline"] = Notebook(
    """The headline figure: the tests of the paper's privacy claim, each claimed epsilon against its audited bounds
    (left), and the paper's-width cells as ours - paper with its 95% interval and verdict (right);
    headline_cells.csv is the README's table of the cells, privacy_cost.csv the privacy cost at the paper's width
    (ours beside the paper's).""",
    made("headline", "headline_cells.csv", "privacy_cost.csv", "headline"),
    (BEYOND, "Headline", "the headline: accuracy and privacy"),
    run_inputs(sorted({p for o in OBJECTS.values() if o.paper_object is None for p in profile_run_paths(o, PROFILE)}))
    + [f for job in NOTEBOOKS.values() if job.made for f in job.files if Path(f).stem in _AUDITS and f.endswith(".csv")],
    RUN_PARAMS)
# what `rule all` asks for, and what the index reads (every table the profile makes)
NOTEBOOK_TARGETS = [f for job in NOTEBOOKS.values() if job.made for f in job.files]
TABLES = [f for f in NOTEBOOK_TARGETS if f.endswith(".csv")]


for _name, _job in NOTEBOOKS.items():

    rule:
        """A notebook job of NOTEBOOKS (its docstring is set below, from its line there)."""
        name:
            _name
        input:
            deps(f"notebooks/{_job.notebook or _name}.ipynb", CODE, _job.reads),
        output:
            *report_outputs(_job.files, _name, *_job.in_report),
        log:
            f"{NB_LOGS}/{_name}.log",
        params:
            cmd=papermill(_job.notebook or _name, _job.params, out=_name),
        conda:
            ENV
        shell:
            "{params.cmd}"

    workflow.get_rule(_name).docstring = " ".join(_job.doc.split())
