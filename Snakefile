"""dirdp: every table and figure of Rao et al. (2026) that this artifact regenerates.

    snakemake --cores all --resources gpu=1                                   # paper profile (default, GPU)
    snakemake --cores all --resources gpu=1 --configfile config/quick.yaml    # CPU-only machine, minutes
    snakemake --cores all --configfile config/cpu.yaml                        # paper protocol, reduced width
    snakemake --profile profiles/slurm                                        # paper profile on a SLURM cluster

Each training run is one job (``python -m dirdp train``) writing results/runs/<profile>/<dataset>/<tag>.json;
rerunning after an interruption redoes only missing runs, and a half-finished run resumes from its
checkpoint. Each table or figure is one parameterized notebook, executed by papermill into
results/notebooks/ (log in results/logs/), writing results/<object>.csv and figures/<stem>.{png,pdf}.
results/README.md indexes them all. ``--config 'datasets=[mnist,fashionmnist]'`` restricts the DAG;
``--config train=false`` rebuilds every table from the runs already on disk and trains nothing.
"""

import json
import os
import sys

from dirdp.experiments import OBJECTS, Profile, missing_data_message
from dirdp.report import profile_run_paths

configfile: "config/paper.yaml"

PY = sys.executable
NB = "results/notebooks"
LOGS = "results/logs"
CORE = ["dirdp/accountant.py", "dirdp/mechanism.py", "dirdp/theory.py", "dirdp/presets.py", "dirdp/paper.py",
        "dirdp/tables.py", "dirdp/provenance.py"]
REPORT = ["dirdp/report.py", "dirdp/experiments.py", "dirdp/paper.py", "dirdp/paper_accuracy.csv"]

PROFILE = Profile.from_config(config)
RUNS = PROFILE.all_runs()  # result path -> Run
# --config train=false: aggregate the runs already on disk, schedule no training (missing runs show
# as "not run here (result file missing)")
TRAIN = str(config.get("train", True)).lower() not in ("false", "0", "no")


def run_inputs(paths):
    return [p for p in paths if TRAIN or os.path.exists(p)]

TRAINING = PROFILE.training
ON_GPU = str(TRAINING.get("device", "cpu")).startswith("cuda")
PROFILE_PARAM = {k: config.get(k) for k in ("profile", "objects", "datasets", "training", "grids", "also_show")}

_missing = PROFILE.missing_data(config.get("data_root"))
if _missing and RUNS and TRAIN:
    sys.exit("dirdp: " + missing_data_message(_missing, PROFILE.name))


def papermill(name, params, *, out=None):
    """Shell command running notebooks/<name>.ipynb with papermill, parameters given as JSON."""
    return (f"{PY} -m papermill --no-progress-bar notebooks/{name}.ipynb {NB}/{out or name}.ipynb "
            f"-p results_dir results -p figures_dir figures -y '{json.dumps(params)}' > {LOGS}/{out or name}.log 2>&1")


def object_outputs(name):
    obj = OBJECTS[name]
    stem = obj.figures[0] if obj.figures else name
    return [f"results/{name}.csv", f"figures/{stem}.png", f"figures/{stem}.pdf", f"{NB}/{name}.ipynb"]


OBJECT_TARGETS = [f for name in OBJECTS for f in object_outputs(name)]
FIXED_TARGETS = ["results/table6.csv", "results/table7.csv", "figures/h_of_r.pdf", "results/theorem11_mc.csv",
                 "figures/theorem11_kappa_variance.pdf", f"{NB}/explore_kappa.ipynb", "results/runs_summary.csv",
                 "figures/runs_accuracy_curves.pdf", "results/baselines_comparison.csv", "results/audit_canary.csv",
                 "results/audit_released_models.csv", "results/width_effect.csv", "figures/width_effect.pdf"]


rule all:
    """Every object of the paper: its table, figure and executed notebook, and the index."""
    input:
        FIXED_TARGETS,
        OBJECT_TARGETS,
        "results/README.md",


rule train:
    """One training run of the profile (Algorithm 1 or a baseline): result JSON with provenance,
    model weights beside it; resumes from <json>.ckpt.pt when a previous attempt was interrupted."""
    output:
        "results/runs/{profile}/{dataset}/{tag}.json",
    log:
        f"{LOGS}/runs/{{profile}}/{{dataset}}/{{tag}}.log",
    wildcard_constraints:
        profile=PROFILE.name,
        tag=r"[A-Za-z0-9_.\-]+",
    threads: int(TRAINING.get("threads", 1))
    resources:
        gpu=1 if ON_GPU else 0,
    params:
        args=lambda wc, output: " ".join(PROFILE.train_args(RUNS[output[0]])),
    shell:
        "{PY} -m dirdp train {params.args} --threads {threads} --out {output} > {log} 2>&1"


for _name in OBJECTS:

    rule:
        """One table or figure of the paper from its runs, beside the paper's printed values."""
        name:
            _name
        input:
            f"notebooks/{_name}.ipynb",
            REPORT,
            run_inputs(profile_run_paths(OBJECTS[_name], PROFILE)),  # its runs, and those of `also_show` on disk
        output:
            object_outputs(_name),
        log:
            f"{LOGS}/{_name}.log",
        params:
            cmd=papermill(_name, {"object_name": _name, "config": PROFILE_PARAM, "runs_root": "results/runs"}),
        shell:
            "{params.cmd}"


rule baselines_comparison:
    """Accuracy against eps for every method run here (Algorithm 1, DP-SGD, tempered-sigmoid DP-SGD,
    LATENT) on MNIST and FashionMNIST, beside the paper's and the cited values."""
    input:
        "notebooks/baselines_comparison.ipynb",
        REPORT,
        run_inputs([p for o in ("table2_mnist", "table4_fashionmnist") for p in profile_run_paths(OBJECTS[o], PROFILE)]),
    output:
        "results/baselines_comparison.csv",
        "figures/baselines_comparison.png",
        "figures/baselines_comparison.pdf",
        f"{NB}/baselines_comparison.ipynb",
    log:
        f"{LOGS}/baselines_comparison.log",
    params:
        cmd=papermill("baselines_comparison", {"config": PROFILE_PARAM, "runs_root": "results/runs"}),
    shell:
        "{params.cmd}"


rule width_effect:
    """FashionMNIST, Algorithm 1: test accuracy against model width (0.25x, 0.5x on CPU; 1x from the gpu
    profile's runs where they exist) at eps = 2 and eps = inf, beside the paper's full-width values."""
    input:
        "notebooks/width_effect.ipynb",
        REPORT,
        run_inputs(profile_run_paths(OBJECTS["table4_fashionmnist"], PROFILE)),
    output:
        "results/width_effect.csv",
        "figures/width_effect.png",
        "figures/width_effect.pdf",
        f"{NB}/width_effect.ipynb",
    log:
        f"{LOGS}/width_effect.log",
    params:
        cmd=papermill("width_effect", {"config": PROFILE_PARAM, "runs_root": "results/runs"}),
    shell:
        "{params.cmd}"


rule index:
    """results/README.md: every object, the command that makes it, ours vs the paper, a status."""
    input:
        [f"results/{name}.csv" for name in OBJECTS],
        "results/table6.csv",
        "results/table7.csv",
        "results/theorem11_mc.csv",
        "results/audit_canary.csv",
        "dirdp/index.py",
    output:
        "results/README.md",
    params:
        profile=PROFILE.name,
    shell:
        "{PY} -m dirdp index --results results --profile {params.profile} --out {output}"


rule table6_table7_rstar:
    """Tables 6 and 7: r* of Eq. (1) by Brent's method on Theorem 10, beside the paper's values;
    the floor lim r->0 h(r) per protocol; h(r) curves."""
    input:
        "notebooks/table6_table7_rstar.ipynb",
        CORE,
    output:
        "results/table6.csv",
        "results/table7.csv",
        "figures/h_of_r.png",
        "figures/h_of_r.pdf",
        f"{NB}/table6_table7_rstar.ipynb",
    log:
        f"{LOGS}/table6_table7_rstar.log",
    params:
        cmd=papermill("table6_table7_rstar", {}),
    shell:
        "{params.cmd}"


rule theorem11_kappa_variance:
    """Theorem 11 by Monte Carlo (Eqs. 3-5, with SEs and z-scores) and kappa / Var against alpha
    with the regimes of Appendix C.1."""
    input:
        "notebooks/theorem11_kappa_variance.ipynb",
        CORE,
    output:
        "results/theorem11_mc.csv",
        "figures/theorem11_kappa_variance.png",
        "figures/theorem11_kappa_variance.pdf",
        f"{NB}/theorem11_kappa_variance.ipynb",
    log:
        f"{LOGS}/theorem11_kappa_variance.log",
    params:
        cmd=papermill("theorem11_kappa_variance", config["theorem11"]),
    shell:
        "{params.cmd}"


rule explore_kappa:
    """The interactive kappa / E[loss] / Var explorer, executed once headless as a smoke check."""
    input:
        "notebooks/explore_kappa.ipynb",
        CORE,
    output:
        f"{NB}/explore_kappa.ipynb",
    log:
        f"{LOGS}/explore_kappa.log",
    params:
        cmd=papermill("explore_kappa", config["explore_kappa"]),
    shell:
        "{params.cmd}"


rule runs_summary:
    """Every run of this profile, one row each, beside the paper's accuracy for its cell (width
    always shown); accuracy curves during training."""
    input:
        "notebooks/runs_summary.ipynb",
        "dirdp/runs.py",
        "dirdp/paper.py",
        run_inputs(sorted(RUNS)),
    output:
        "results/runs_summary.csv",
        "figures/runs_accuracy_curves.png",
        "figures/runs_accuracy_curves.pdf",
        f"{NB}/runs_summary.ipynb",
    log:
        f"{LOGS}/runs_summary.log",
    params:
        cmd=papermill("runs_summary", {"runs_dir": f"results/runs/{PROFILE.name}"}),
    shell:
        "{params.cmd}"


rule audit_privacy:
    """The privacy audit (dirdp.audit): reconstruction of private images from one update (analytic on a
    dense first layer, gradient inversion on conv models), canary epsilon lower bounds for Algorithm 1,
    DP-SGD and LATENT at the same claimed eps, and membership inference at matched claimed eps."""
    input:
        "notebooks/audit_privacy.ipynb",
        "dirdp/audit.py",
        "dirdp/mechanism.py",
        "dirdp/accountant.py",
        "dirdp/baselines/dpsgd.py",
        "dirdp/baselines/latent.py",
    output:
        "results/audit_canary.csv",
        "results/audit_reconstruction.csv",
        "results/audit_membership.csv",
        "figures/audit_reconstruction.png",
        "figures/audit_eps_claimed_vs_lower_bound.png",
        "figures/audit_eps_claimed_vs_lower_bound.pdf",
        f"{NB}/audit_privacy.ipynb",
    log:
        f"{LOGS}/audit_privacy.log",
    params:
        cmd=papermill("audit_privacy", {**config["audit"], "profile": PROFILE.name}),
    shell:
        "{params.cmd}"


rule audit_released_models:
    """Membership inference (loss threshold) on every image model this profile released."""
    input:
        "notebooks/audit_released_models.ipynb",
        "dirdp/audit.py",
        run_inputs(sorted(p for p, run in RUNS.items() if run.method != "latent")),
    output:
        "results/audit_released_models.csv",
        f"{NB}/audit_released_models.ipynb",
    log:
        f"{LOGS}/audit_released_models.log",
    params:
        cmd=papermill("audit_released_models", {"profile": PROFILE.name, "runs_dir": f"results/runs/{PROFILE.name}",
                                                "n": 2000}),
    shell:
        "{params.cmd}"
