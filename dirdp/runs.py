"""Read training-run result files (``results/runs/**/*.json``) into one table beside the paper."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from dirdp import paper


def _num(v):
    return math.inf if v == "inf" else v


def collect(root: str | Path = "results/runs") -> pd.DataFrame:
    """One row per run: protocol, r*, certified epsilon, accuracy, time, and the paper's value
    for that (data set, eps) cell with the difference. Width is shown, never hidden: a
    reduced-width run is compared with the paper's full-width number as such."""
    rows = []
    for path in sorted(Path(root).glob("**/*.json")):
        rec = json.loads(path.read_text())
        eps = _num(rec["eps_target"])
        mean, std = paper.ACCURACY.get(rec["dataset"], {}).get(eps, (None, None))
        rows.append(dict(
            run=str(path), dataset=rec["dataset"], model=rec["model"], width=rec["width"],
            width_label=rec["width_label"], eps=eps, seed=rec["seed"], q=rec["q"], steps=rec["steps"],
            rstar=rec["rstar"], certified_eps=_num(rec["epsilon"]), order=rec["epsilon_order"],
            test_accuracy=rec["test_accuracy"], paper_accuracy=mean, paper_std=std,
            diff=None if mean is None else round(rec["test_accuracy"] - mean, 2),
            wall_time_min=round(rec["wall_time_s"] / 60, 1), steps_per_s=rec["steps_per_s"],
            device=rec["provenance"]["device"], git_commit=rec["provenance"]["git_commit"],
        ))
    return pd.DataFrame(rows)


def curves(root: str | Path = "results/runs") -> pd.DataFrame:
    """Long table of every run's test-accuracy curve: run, dataset, eps, width, step, accuracy."""
    rows = []
    for path in sorted(Path(root).glob("**/*.json")):
        rec = json.loads(path.read_text())
        for step, acc in rec["accuracy_curve"]:
            rows.append(dict(run=str(path), dataset=rec["dataset"], eps=_num(rec["eps_target"]), width=rec["width"],
                             step=step, test_accuracy=acc))
    return pd.DataFrame(rows)
