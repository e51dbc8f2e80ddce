"""dirdp: every table and figure of Rao et al. (2026) that this artifact regenerates.

    snakemake --cores all --resources gpu=1                             # paper profile (default)
    snakemake --cores all --resources gpu=1 --configfile config/quick.yaml   # CPU-only machine

Each rule executes one parameterized notebook with papermill into results/notebooks/, writes
its log to results/logs/, and its tables (with provenance) to results/ and figures to figures/.
"""

import glob
import json
import sys

configfile: "config/paper.yaml"

PY = sys.executable
NB = "results/notebooks"
LOGS = "results/logs"
CORE = ["dirdp/accountant.py", "dirdp/mechanism.py", "dirdp/theory.py", "dirdp/presets.py", "dirdp/paper.py",
        "dirdp/tables.py", "dirdp/provenance.py"]


def papermill(name, params):
    """Shell command running notebooks/<name>.ipynb with papermill, parameters given as JSON."""
    return (f"{PY} -m papermill --no-progress-bar notebooks/{name}.ipynb {NB}/{name}.ipynb "
            f"-p results_dir results -p figures_dir figures -y '{json.dumps(params)}' > {LOGS}/{name}.log 2>&1")


rule all:
    """Every object this profile regenerates."""
    input:
        "results/table6.csv",
        "results/table7.csv",
        "figures/h_of_r.pdf",
        "results/theorem11_mc.csv",
        "figures/theorem11_kappa_variance.pdf",
        f"{NB}/explore_kappa.ipynb",
        "results/runs_summary.csv",
        "figures/runs_accuracy_curves.pdf",


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
    """Every training run committed under results/runs/ (python -m dirdp train), beside the
    paper's accuracy for its cell, width always shown; accuracy curves."""
    input:
        "notebooks/runs_summary.ipynb",
        "dirdp/runs.py",
        "dirdp/paper.py",
        sorted(glob.glob("results/runs/**/*.json", recursive=True)),
    output:
        "results/runs_summary.csv",
        "figures/runs_accuracy_curves.png",
        "figures/runs_accuracy_curves.pdf",
        f"{NB}/runs_summary.ipynb",
    log:
        f"{LOGS}/runs_summary.log",
    params:
        cmd=papermill("runs_summary", {"runs_dir": "results/runs"}),
    shell:
        "{params.cmd}"
