"""Result files of training runs (``results/runs/<profile>/<dataset>/<tag>.json``), read by one reader.

:func:`read_run` is the only code that opens a result JSON: the object tables (:mod:`dirdp.report.objects`), the
runs summary (:func:`collect`) and the accuracy curves (:func:`curves`) all take their fields from it, and every
epsilon in a file goes through :func:`dirdp.protocol.parse_eps`.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from dirdp import paper, provenance
from dirdp.presets import get_preset
from dirdp.protocol import parse_eps

# the table that prints each data set's protocol-default Algorithm 1 runs (Section 4.2)
MAIN_TABLE = {"cifar10": "table1_cifar10", "mnist": "table2_mnist", "dermamnist": "table3_dermamnist",
              "fashionmnist": "table4_fashionmnist", "svhn": "table5_svhn"}


def read_run(path: str | Path) -> dict:
    """The fields of one result JSON that the tables need (provenance stays in the file): what ran (data set,
    method, eps, seed, q, alpha, lr, optimizer, steps, width, norm), its r* and certified epsilon, test and validation
    accuracy, ``protocol`` (the paper's, or reduced, and how), the accuracy curve as (step, accuracy) pairs, and
    ``dirty``: None, or when its commit ends in "+dirty" what the file records of the uncommitted code
    (:func:`dirdp.provenance.dirty`)."""
    rec = json.loads(Path(path).read_text())
    cfg = rec["provenance"]["config"]
    preset = get_preset(rec["dataset"])
    reduced = [f"T={rec['steps']}" if rec["steps"] != preset.steps else None,
               f"q={rec['q']:.4g}" if not math.isclose(rec["q"], preset.q) else None,
               f"training subset {cfg['train_subset']}" if cfg.get("train_subset") else None]
    reduced = [r for r in reduced if r]
    return dict(
        path=str(path), dataset=rec["dataset"], method=rec.get("method", "alg1"), eps=parse_eps(rec["eps_target"]),
        seed=rec["seed"], q=rec["q"], alpha=rec["alpha"], lr=cfg["lr"], optimizer=cfg["optimizer"], steps=rec["steps"],
        width=rec["width"], norm=_norm(rec), precision=precision(rec), rstar=rec["rstar"],
        certified_eps=None if rec["epsilon"] is None else parse_eps(rec["epsilon"]),
        test=rec["test_accuracy"], val=rec.get("val_accuracy"),
        protocol=("LATENT protocol (local DP)" if rec.get("method") == "latent" else "paper protocol" if not reduced
                  else "reduced protocol (" + ", ".join(reduced) + ")"),
        width_label=rec["width_label"], device=rec["provenance"]["device"],
        git_commit=rec["provenance"]["git_commit"], dirty=provenance.dirty(rec["provenance"]),
        wall_time_s=rec["wall_time_s"],
        curve=[tuple(point) for point in rec.get("accuracy_curve") or []],
        # the baselines' own privacy fields (None for the other methods): DP-SGD's second accountant and sigma,
        # LATENT's exact LDP loss (worst case, and the median over pairs of real records) and string length
        epsilon_prv=rec.get("epsilon_prv"), noise_multiplier=rec.get("noise_multiplier"),
        eps_ldp_worst_case=rec.get("eps_ldp_worst_case"), eps_pair_median=rec.get("eps_pair_median"),
        latent_string_length=(rec.get("latent") or {}).get("string_length"),
    )


def model_label(run: dict) -> str:
    """A run's width label (from :func:`read_run`), with ", GroupNorm" where Algorithm 1 ran with GroupNorm
    (``--norm group``; not the paper's model) and ", bf16" where the model ran under bf16 autocast: the one label the
    tables and the audits give a released model."""
    return (run["width_label"] + (", GroupNorm" if run["norm"] == "group" and run["method"] == "alg1" else "")
            + (", bf16" if run.get("precision") == "bf16" else ""))


def precision(rec: dict) -> str:
    """A result's precision: its ``precision`` field, or for a file made before that field existed, what its config
    says (``bf16``), so fp32 for every run of the commits before."""
    return rec.get("precision") or ("bf16" if rec["provenance"]["config"].get("bf16") else "fp32")


def _norm(rec: dict) -> str:
    """What normalised the run's model (the result's ``norm``: batch, group or none); for a file made before that
    field existed, what the model of its method was: none for the Papernot CNN and LATENT, group for DP-SGD's
    (BatchNorm replaced), else batch."""
    if rec.get("norm"):
        return rec["norm"]
    if rec.get("method") == "latent" or rec["provenance"]["config"].get("model") == "papernot_cnn":
        return "none"
    return "group" if rec.get("method") == "dpsgd" else "batch"


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
        default = (run["method"] == "alg1" and run["optimizer"] == "sgd" and run["alpha"] == preset.alpha
                   and run["lr"] == preset.lr)
        printed = paper.accuracy(MAIN_TABLE[run["dataset"]])
        cell = printed[(printed.method == "Algorithm 1") & (printed.eps == run["eps"])] if default else printed[:0]
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
