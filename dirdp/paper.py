"""Values printed in the paper (arXiv 2607.19580), transcribed for side-by-side comparison.

These numbers are the paper's, never ours: every table that shows them labels them "paper"
and puts our recomputed value and the difference beside them.
"""

from pathlib import Path

import pandas as pd

from dirdp.protocol import parse_eps

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

# Section 4.2.5: "training an epoch (200 steps) for Algorithm 1 consumes ~ 30 seconds, while for DP-SGD it consumes
# ~ 60 seconds", privately training ResNet-18 on CIFAR10 (the paper's GPUs, Section 4.1.2: Nvidia Quadro RTX6000).
EPOCH_SECONDS_ALG1, EPOCH_SECONDS_DPSGD = 30.0, 60.0
EPOCH_SETTING = "ResNet-18 on CIFAR10, an epoch of 200 steps, GPU"

_ACCURACY_CSV = Path(__file__).with_name("paper_accuracy.csv")


def accuracy(obj: str | None = None) -> pd.DataFrame:
    """Accuracies (%) printed in Tables 1-5 and 8-10 (``paper_accuracy.csv``), optionally for one
    paper object. label "paper": runs the paper's authors made (Algorithm 1, and their own DP-SGD
    baseline with Opacus in Tables 4-5); label "paper, cited": numbers the paper quotes from other
    work, at the eps they were reported at (``eps_reported``) when that differs from the column.
    eps = inf is the non-private column; a printed std is one std over the paper's 5 seeds."""
    df = pd.read_csv(_ACCURACY_CSV, comment="#")
    df["eps"] = df.eps.map(parse_eps)
    return df if obj is None else df[df.object == obj].reset_index(drop=True)
