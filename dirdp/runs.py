"""Read training-run result files (``results/runs/**/*.json``) into one table beside the paper."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from dirdp import paper
from dirdp.presets import get_preset


# the table that prints each data set's protocol-default Algorithm 1 runs (Section 4.2)
MAIN_TABLE = {"cifar10": "table1_cifar10", "mnist": "table2_mnist", "dermamnist": "table3_dermamnist",
              "fashionmnist": "table4_fashionmnist", "svhn": "table5_svhn"}


def _num(v):
    return math.inf if v == "inf" else v


def collect(root: str | Path = "results/runs") -> pd.DataFrame:
    """One row per run: protocol, r*, certified epsilon, accuracy, time, and, for a run of the
    data set's default protocol (SGD, alpha = 3, the paper's gamma), the paper's value for that
    (data set, eps) cell with the difference. Width is shown, never hidden: a reduced-width run is
    compared with the paper's full-width number as such."""
    from dirdp.report import read_run

    rows = []
    for path in sorted(Path(root).glob("**/*.json")):
        run = read_run(path)
        preset = get_preset(run["dataset"])
        default = (run["method"] == "alg1" and run["optimizer"] == "sgd" and run["alpha"] == preset.alpha
                   and run["lr"] == preset.lr)
        printed = paper.accuracy(MAIN_TABLE[run["dataset"]])
        cell = printed[(printed.method == "Algorithm 1") & (printed.eps == run["eps"])] if default else printed[:0]
        mean = float(cell.accuracy.iloc[0]) if len(cell) else None
        std = float(cell["std"].iloc[0]) if len(cell) and not pd.isna(cell["std"].iloc[0]) else None
        rows.append(dict(
            run=str(path), dataset=run["dataset"], method=run["method"], width=run["width"],
            width_label=run["width_label"], protocol=run["protocol"], eps=run["eps"], seed=run["seed"], q=run["q"],
            steps=run["steps"], rstar=run["rstar"], certified_eps=run["certified_eps"], test_accuracy=run["test"],
            paper_accuracy=mean, paper_std=std, diff=None if mean is None else round(run["test"] - mean, 2),
            wall_time_min=round(run["wall_time_s"] / 60, 1), device=run["device"], git_commit=run["git_commit"],
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
