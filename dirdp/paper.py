"""Values printed in the paper (arXiv 2607.19580), transcribed for side-by-side comparison.

These numbers are the paper's, never ours: every table that shows them labels them "paper"
and puts our recomputed value and the difference beside them.
"""

# Table 6 (Appendix C.1): r* for CIFAR10/ResNet-18, eps = 1, delta = 1e-5, q = 250/50000, T = 20000.
TABLE6_RSTAR: dict[float, float] = {0.1: 0.0087, 0.3: 0.0260, 0.5: 0.0433, 1.0: 0.0864, 2.0: 0.1580, 3.0: 0.2349}

# Table 7 (Appendix D.2): r* at alpha = 3, delta = 1e-5. Cells printed "—" are absent.
TABLE7_EPS: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0)
TABLE7_RSTAR: dict[str, dict[float, float]] = {
    "cifar10": {1.0: 0.235, 2.0: 0.404, 3.0: 0.559, 4.0: 0.679, 6.0: 0.825, 8.0: 0.903},
    "mnist": {0.5: 0.136, 1.0: 0.277, 2.0: 0.472, 4.0: 0.711},
    "dermamnist": {1.0: 0.137, 4.0: 0.645, 7.42: 0.856},
    "svhn": {1.0: 0.284, 2.0: 0.475, 3.0: 0.575, 4.0: 0.717, 6.0: 0.930, 8.0: 0.964},
    "fashionmnist": {0.5: 0.136, 1.0: 0.277, 2.0: 0.472, 4.0: 0.711},
}

# Test accuracy (%) of "This work" as (mean, std over 5 seeds); eps = inf has no std printed.
# Table 2 (MNIST, simplified Inception) and Table 4 (FashionMNIST, simplified Inception).
ACCURACY: dict[str, dict[float, tuple[float, float | None]]] = {
    "mnist": {0.5: (99.28, 0.072), 1.0: (99.37, 0.059), 2.0: (99.40, 0.058), 4.0: (99.44, 0.038),
              float("inf"): (99.51, None)},
    "fashionmnist": {0.5: (81.02, 5.91), 1.0: (86.35, 3.79), 2.0: (91.13, 0.18), 4.0: (91.69, 0.14),
                     float("inf"): (93.13, None)},
}
