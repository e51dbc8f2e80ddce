"""Values printed in the paper (arXiv 2607.19580), transcribed for side-by-side comparison: the accuracies of its
tables (``paper_accuracy.csv``) and its speed claim. The r* it prints (Tables 6 and 7) are the library's, beside the
protocols they belong to (:data:`dirdp.presets.TABLE6_RSTAR`, :data:`dirdp.presets.TABLE7_RSTAR`).

These numbers are the paper's, never ours: every table that shows them labels them "paper"
and puts our recomputed value and the difference beside them.
"""

from pathlib import Path

import pandas as pd

from dirdp.protocol import parse_eps

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
