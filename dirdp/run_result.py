"""A run's result JSON (``results/runs/<profile>/<dataset>/<tag>.json``), read by one reader: :func:`read_run`.

Whatever reads runs (the tables and summaries made from them, the audit of a released model,
:func:`dirdp.audit.membership.released_model_mia`, and the explorer) takes a run's fields from it, and its label from
:func:`model_label`; every epsilon in a file goes through :func:`dirdp.protocol.parse_eps`. Needs neither pandas nor
torch.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from dirdp import methods, provenance
from dirdp.presets import get_preset
from dirdp.protocol import parse_eps


def weights_path(result_path: str | Path) -> Path:
    """The weights a run released, beside its result: ``X.json`` -> ``X.model.pt``."""
    result_path = Path(result_path)
    return result_path.with_name(result_path.stem + ".model.pt")


def read_run(path: str | Path) -> dict:
    """The fields of one result JSON that the tables need (provenance stays in the file): what ran (data set,
    method, eps, seed, q, alpha, lr, optimizer, steps, model, width, norm), its r* and certified epsilon, test and
    validation accuracy, ``protocol`` (in words: the paper's, reduced and how, or the one-run audit's), its typed parts
    ``paper_protocol`` (True for the paper's own) and ``reduced`` (what differs from the paper's, "" where nothing
    does), ``canaries`` (the one-run audit's m; 0 for every other run), the accuracy curve as (step, accuracy) pairs, and
    ``dirty``: None, or when its commit ends in "+dirty" what the file records of the uncommitted code
    (:func:`dirdp.provenance.dirty`)."""
    rec = json.loads(Path(path).read_text())
    cfg = rec["provenance"]["config"]
    preset = get_preset(rec["dataset"])
    reduced = [f"T={rec['steps']}" if rec["steps"] != preset.steps else None,
               f"q={rec['q']:.4g}" if not math.isclose(rec["q"], preset.q) else None,
               f"training subset {cfg['train_subset']}" if cfg.get("train_subset") else None]
    reduced = [r for r in reduced if r]
    method = rec.get("method", methods.DEFAULT)
    canaries = int(cfg.get("canaries") or 0)  # the one-run audit's runs: the training set has canaries added
    own = methods.spec(method).protocol or (f"one-run audit ({canaries} canaries)" if canaries else None)
    return dict(
        path=str(path), dataset=rec["dataset"], method=method, eps=parse_eps(rec["eps_target"]),
        seed=rec["seed"], q=rec["q"], alpha=rec["alpha"], lr=cfg["lr"], optimizer=cfg["optimizer"], steps=rec["steps"],
        width=rec["width"], norm=_norm(rec), precision=precision(rec), rstar=rec["rstar"],
        certified_eps=None if rec["epsilon"] is None else parse_eps(rec["epsilon"]),
        test=rec["test_accuracy"], val=rec.get("val_accuracy"),
        protocol=own or ("paper protocol" if not reduced else "reduced protocol (" + ", ".join(reduced) + ")"),
        paper_protocol=not (own or reduced), reduced=", ".join(reduced),
        model=rec.get("model"), canaries=canaries,
        width_label=rec["width_label"], device=devices(rec["provenance"]),
        git_commit=rec["provenance"]["git_commit"], dirty=provenance.dirty(rec["provenance"]),
        wall_time_s=rec["wall_time_s"],
        curve=[tuple(point) for point in rec.get("accuracy_curve") or []],
        # the baselines' own privacy fields (None for the other methods): DP-SGD's second accountant and sigma,
        # LATENT's exact LDP loss (worst case, and the median over pairs of real records) and string length
        epsilon_prv=rec.get("epsilon_prv"), noise_multiplier=rec.get("noise_multiplier"),
        eps_ldp_worst_case=rec.get("eps_ldp_worst_case"), eps_pair_median=rec.get("eps_pair_median"),
        latent_string_length=(rec.get(methods.LATENT) or {}).get("string_length"),  # LATENT's record, under its key
    )


def devices(prov: dict) -> str:
    """The processors a run trained on, each once, in the order of its sessions (``sessions[].processor``; the last
    session's is ``provenance.device``, taken when it began), and how many sessions named none: those recorded
    before sessions carried ``processor``. A run resumed on another machine names both, so that its wall time is
    read as the sum it is."""
    sessions = prov.get("sessions") or [{}]
    named = [s.get("processor") for s in sessions[:-1]] + [prov["device"]]
    known = list(dict.fromkeys(n for n in named if n))
    unknown = named.count(None)
    return " + ".join(known) + (f" ({unknown} of {len(named)} sessions unrecorded)" if unknown else "")


def model_label(run: dict) -> str:
    """A run's width label (from :func:`read_run`), with ", GroupNorm" where Algorithm 1 ran with GroupNorm
    (``--norm group``; not the paper's model) and ", bf16" where the model ran under bf16 autocast: the one label the
    tables and the audits give a released model."""
    return (run["width_label"] + (", GroupNorm" if run["norm"] == "group" and methods.norm_chosen(run["method"]) else "")
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
    own = methods.spec(rec.get("method", methods.DEFAULT)).norm  # what the method's spec says its model has
    if own == "none" or rec["provenance"]["config"].get("model") == "papernot_cnn":
        return "none"
    return own or "batch"
