"""What needs no training run: the accountant's r* (Tables 6 and 7), Theorem 11 by Monte Carlo, and
the interactive kappa explorer executed headless."""


rule table6_table7_rstar:
    """Tables 6 and 7: r* of Eq. (1) by Brent's method on Theorem 10, beside the paper's values;
    the floor lim r->0 h(r) per protocol; what orders beyond the cap certify for the "—" cells, and kappa there;
    h(r) curves."""
    input:
        deps(
            "notebooks/table6_table7_rstar.ipynb",
            CODE,
        ),
    output:
        *report_outputs(
            [
                f"{RES}/table6.csv",
                f"{RES}/table7.csv",
                f"{RES}/table7_high_orders.csv",
                f"{FIG}/h_of_r.png",
                f"{FIG}/h_of_r.pdf",
                f"{NB}/table6_table7_rstar.ipynb",
            ],
            "table6_table7_rstar",
            THEORY,
            "Tables 6 and 7: r*",
            "Tables 6 and 7",
        ),
    log:
        f"{NB_LOGS}/table6_table7_rstar.log",
    params:
        cmd=papermill("table6_table7_rstar", {}),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule theorem11_kappa_variance:
    """Theorem 11 by Monte Carlo (Eqs. 3-5, with SEs and z-scores) and kappa / Var against alpha
    with the regimes of Appendix C.1."""
    input:
        deps(
            "notebooks/theorem11_kappa_variance.ipynb",
            CODE,
        ),
    output:
        *report_outputs(
            [
                f"{RES}/theorem11_mc.csv",
                f"{FIG}/theorem11_kappa_variance.png",
                f"{FIG}/theorem11_kappa_variance.pdf",
                f"{NB}/theorem11_kappa_variance.ipynb",
            ],
            "theorem11_kappa_variance",
            THEORY,
            "Theorem 11",
            "Theorem 11",
        ),
    log:
        f"{NB_LOGS}/theorem11_kappa_variance.log",
    params:
        cmd=papermill("theorem11_kappa_variance", config["theorem11"]),
    conda:
        ENV
    shell:
        "{params.cmd}"


rule explore_kappa:
    """The kappa explorer (dirdp.explore): kappa, E[loss], Var[loss] and gamma_eff against s_y, h(r), kappa and Var
    against alpha at a fixed eps, the mechanism on the simplex, the training-speed consequence beside the committed
    MNIST runs; executed once headless, so that its executed copy shows every view as a static image."""
    input:
        deps(
            "notebooks/explore_kappa.ipynb",
            CODE,
            sorted(glob.glob("results/runs/cpu/mnist/alg1_eps*_seed0.json")),
        ),
    output:
        *report_outputs(
            [
                f"{NB}/explore_kappa.ipynb",
            ],
            "explore_kappa",
            THEORY,
            "The kappa explorer",
            "kappa explorer",
        ),
    log:
        f"{NB_LOGS}/explore_kappa.log",
    params:
        cmd=papermill("explore_kappa", config["explore_kappa"]),
    conda:
        ENV
    shell:
        "{params.cmd}"
