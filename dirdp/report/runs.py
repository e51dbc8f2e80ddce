"""Result files of training runs (``results/runs/<profile>/<dataset>/<tag>.json``), read by one reader.

:func:`read_run` is the only code that opens a result JSON: the object tables (:mod:`dirdp.report.objects`), the
runs summary (:func:`collect`) and the accuracy curves (:func:`curves`) all take their fields from it, and every
epsilon in a file goes through :func:`dirdp.protocol.parse_eps`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dirdp import methods, paper
from dirdp.presets import get_preset
from dirdp.run_result import model_label, precision, read_run  # noqa: F401  (moved below report/ and audit/)

# the table that prints each data set's protocol-default Algorithm 1 runs (Section 4.2)
MAIN_TABLE = {"cifar10": "table1_cifar10", "mnist": "table2_mnist", "dermamnist": "table3_dermamnist",
              "fashionmnist": "table4_fashionmnist", "svhn": "table5_svhn"}


def run_files(root: str | Path = "results/runs") -> list[Path]:
    """Every result JSON under ``root``, sorted."""
    return sorted(Path(root).glob("**/*.json"))


def collect(root: str | Path = "results/runs") -> pd.DataFrame:
    """One row per run: protocol, r*, certified epsilon, accuracy, time, and, for a run of the
    data set's default protocol (SGD, alpha = 3, the paper's gamma), the paper's value for that
    (data set, eps) cell with the difference. Width is shown, never hidden: a reduced-width run is
    compared with the paper's full-width number as such. A run of uncommitted code has ``dirty`` True, with its
    ``dirty_files`` (joined by ";") and ``dirty_diff_sha256``, "not recorded" in files made before they were."""
    rows = []
    for path in run_files(root):
        run = read_run(path)
        preset = get_preset(run["dataset"])
        default = (methods.is_ours(run["method"]) and run["optimizer"] == "sgd" and run["alpha"] == preset.alpha
                   and run["lr"] == preset.lr)
        printed = paper.accuracy(MAIN_TABLE[run["dataset"]])
        cell = printed[(printed.method == methods.label(methods.ALG1)) & (printed.eps == run["eps"])] if default else printed[:0]
        mean = float(cell.accuracy.iloc[0]) if len(cell) else None
        std = float(cell["std"].iloc[0]) if len(cell) and not pd.isna(cell["std"].iloc[0]) else None
        rows.append(dict(
            run=str(path), dataset=run["dataset"], method=run["method"], width=run["width"],
            width_label=model_label(run), precision=run["precision"], protocol=run["protocol"], eps=run["eps"],
            seed=run["seed"], q=run["q"],
            steps=run["steps"], rstar=run["rstar"], certified_eps=run["certified_eps"], test_accuracy=run["test"],
            paper_accuracy=mean, paper_std=std, diff=None if mean is None else round(run["test"] - mean, 2),
            wall_time_min=round(run["wall_time_s"] / 60, 1), device=run["device"], git_commit=run["git_commit"],
            **_dirty_columns(run["dirty"]),
        ))
    return pd.DataFrame(rows)


def _dirty_columns(dirty: dict | None) -> dict:
    if dirty is None:
        return dict(dirty=False, dirty_files=None, dirty_diff_sha256=None)
    files = dirty["dirty_files"]
    return dict(dirty=True, dirty_files="not recorded" if files is None else ";".join(files),
                dirty_diff_sha256=dirty["dirty_diff_sha256"] or "not recorded")


def curves(root: str | Path = "results/runs") -> pd.DataFrame:
    """Long table of every run's test-accuracy curve: run, dataset, eps, width, step, accuracy."""
    rows = []
    for path in run_files(root):
        run = read_run(path)
        rows += [dict(run=str(path), dataset=run["dataset"], eps=run["eps"], width=run["width"], step=step,
                      test_accuracy=acc) for step, acc in run["curve"]]
    return pd.DataFrame(rows)
