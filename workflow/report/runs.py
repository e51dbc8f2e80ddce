"""Result files of training runs (``results/runs/<profile>/<dataset>/<tag>.json``), read by one reader.

:func:`dirdp.run_result.read_run` is the only code that opens a result JSON: the object tables (:mod:`workflow.report.objects`), the
runs summary (:func:`collect`) and the accuracy curves (:func:`curves`) all take their fields from it, and every
epsilon in a file goes through :func:`dirdp.protocol.parse_eps`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dirdp import methods
from dirdp.presets import get_preset
from dirdp.protocol import fmt_eps
from dirdp.run_result import model_label, precision, read_run
from workflow import paper

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
                   and run["lr"] == preset.lr and not run["canaries"] and run["model"] == preset.model)
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
    """Long table of every run's test-accuracy curve: run, dataset, method, eps, width, norm, precision, protocol
    (and ``reduced``: what differs from the paper's, "" for nothing), seed, step, accuracy."""
    rows = []
    for path in run_files(root):
        run = read_run(path)
        rows += [dict(run=str(path), dataset=run["dataset"], method=run["method"], eps=run["eps"], width=run["width"],
                      norm=run["norm"], precision=run["precision"], protocol=run["protocol"], reduced=run["reduced"],
                      seed=run["seed"],
                      step=step, test_accuracy=acc) for step, acc in run["curve"]]
    return pd.DataFrame(rows)


CELL = ["dataset", "method", "eps", "width", "norm", "precision", "protocol", "reduced"]  # what tells cells apart


def cell_label(method: str, eps: float, width: float, norm: str, precision: str, reduced: str, *,
               method_shown: bool = True) -> str:
    """A cell of runs in words, for a legend: "Alg. 1, ε = 1, 0.25x, bf16" (the method's short name unless
    ``method_shown`` is False, where the panel names it; the width where the profile's width applies to the method's
    model; GroupNorm where the method lets the run choose it; bf16; what a reduced protocol changes, ``reduced``), e.g.
    "LATENT, ε = 0.5"."""
    parts = [methods.short(method)] if method_shown else []
    parts.append(f"ε = {fmt_eps(eps)}")
    if methods.spec(method).scaled:
        parts.append(f"{width:g}x")
    if norm == "group" and methods.norm_chosen(method):
        parts.append("GroupNorm")
    if precision == "bf16":
        parts.append("bf16")
    if isinstance(reduced, str) and reduced:
        parts.append(reduced)
    return ", ".join(parts)


def curve_cells(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`curves` aggregated by cell (:data:`CELL`: data set, method, eps, width, norm, precision, protocol) and
    step: mean, min and max over the cell's seeds, n (seeds at that step), ``seeds`` (all of the cell's, joined) and
    ``final`` (the mean at the cell's last step), one row per cell and step; empty in, empty out."""
    cols = [*CELL, "step", "mean", "lo", "hi", "n", "seeds", "final"]
    if table.empty:
        return pd.DataFrame(columns=cols)
    out = (table.groupby([*CELL, "step"], dropna=False).test_accuracy
           .agg(mean="mean", lo="min", hi="max", n="count").reset_index())
    seeds = table.groupby(CELL, dropna=False).seed.agg(lambda s: " ".join(str(v) for v in sorted(set(s))))
    out["seeds"] = [seeds[tuple(k)] for k in out[CELL].itertuples(index=False)]
    last = out.sort_values("step").groupby(CELL, dropna=False)["mean"].last()
    out["final"] = [last[tuple(k)] for k in out[CELL].itertuples(index=False)]
    return out[cols]
