"""The audit of the released models, run by run: each model's membership row (:func:`dirdp.audit.membership
.released_model_mia`) kept in a record beside its run (:func:`record_path`), so that a row whose weights are not in
the checkout (the paper-width models' stay out of git) travels as that record; :func:`released_model_row` reads it back
where it was made for the same weights, n, seed and code (:func:`dirdp.audit.membership.code_sha256`), and
``python -m workflow membership`` (:func:`command`) makes the records where the weights are."""

from __future__ import annotations

import json
from pathlib import Path

from dirdp.run_result import weights_path

# the audit of the released models (rules/notebooks.smk): this many of a run's training records against as many test
# records (its records are made, and read back, at this n)
RELEASED_MODELS_N = 10_000


def record_path(result_path: str | Path) -> Path:
    """The record of a released model's membership row, beside its result: ``X.json`` -> ``X.json.membership``
    (JSON; named like the checkpoint ``X.json.ckpt.pt``, so that no reader of ``results/runs/**/*.json`` takes it for
    a run; :func:`released_model_row` writes and reads it)."""
    result_path = Path(result_path)
    return result_path.with_name(result_path.name + ".membership")


def _key(result_path, n: int, seed: int) -> dict:
    from dirdp.audit import membership  # here, not above: the Snakefile reads RELEASED_MODELS_N without torch

    res = json.loads(Path(result_path).read_text())
    return dict(params_sha256=res.get("params_sha256"), n=int(n), seed=int(seed), code_sha256=membership.code_sha256())


def _why_not(record: Path, key: dict) -> str | None:
    """None when ``record`` holds a row made for ``key``; else why it does not."""
    if not record.exists():
        return f"no record ({record.name})"
    try:
        made = json.loads(record.read_text())["key"]
    except (OSError, ValueError, KeyError, TypeError):
        return f"{record.name} is not a membership record"
    diff = [k for k in key if made.get(k) != key[k]]
    return f"{record.name} was made for another {', '.join(diff)}" if diff else None


def why_no_record(result_path, *, n: int, seed: int) -> str | None:
    """None when the run's record (:func:`record_path`) holds its row for these weights, ``n``, ``seed`` and code;
    else why not, in a few words."""
    return _why_not(record_path(result_path), _key(result_path, n, seed))


def released_model_row(result_path, *, n: int = 2000, seed: int = 0, data_root=None,
                       store: bool = False) -> tuple[dict | None, str]:
    """The membership row of one released model (:func:`dirdp.audit.membership.released_model_mia`) and where it came from (column
    ``row_from``), or None and why there is none.

    The row is read from the run's record (:func:`record_path`) when that record was made for the same weights
    (the result's ``params_sha256``), ``n``, ``seed`` and row code (:func:`dirdp.audit.membership.code_sha256`); else computed from the
    weights beside the result (``X.model.pt``) and, with ``store``, written to the record (with its provenance).
    Without a valid record or the weights (the paper-width models' weights are not in git) there is no row."""
    from dirdp import provenance

    result_path, record = Path(result_path), record_path(result_path)
    key = _key(result_path, n, seed)
    why = _why_not(record, key)
    if why is None:
        kept = json.loads(record.read_text())
        prov = kept["provenance"]
        row = {k: float(v) if v in ("inf", "-inf", "nan") else v for k, v in kept["row"].items()}  # jsonable's
        commit = str(prov["git_commit"])
        return row, f"{record} (made {prov['created_utc']} at {commit[:12] + commit[40:]}, {prov['device']})"
    if not weights_path(result_path).exists():
        return None, f"its weights are not in this checkout and {why}"
    import time

    from dirdp.audit import membership

    start = time.perf_counter()
    row = membership.released_model_mia(result_path, n=n, seed=seed, data_root=data_root)
    if not store:
        return row, "the weights"
    prov = provenance.collect(dict(result=str(result_path), n=n, seed=seed),
                              wall_time_s=time.perf_counter() - start, seed=seed)
    record.write_text(json.dumps(provenance.jsonable(dict(key=key, row=row, provenance=prov)), indent=1,
                                 allow_nan=False) + "\n")
    return row, f"the weights (kept in {record})"


def command(runs, *, n: int | None = None, seed: int = 0, data_root=None) -> int:
    """``python -m workflow membership RUN.json...``: each run's row kept in its record (:func:`released_model_row`,
    ``store``), ``n`` the DAG's (:data:`RELEASED_MODELS_N`) unless given. Every run is checked before
    any is audited: a mistake is one line on stderr and exit 2."""
    import sys

    from dirdp.data import DatasetMissingError

    def refuse(line: str) -> int:
        print(f"error: {line}", file=sys.stderr)
        return 2

    n = RELEASED_MODELS_N if n is None else n
    if n < 1:
        return refuse(f"--n must be at least 1. Found {n}.")
    todo = []
    for run in map(Path, runs):
        try:
            res = json.loads(run.read_text())
        except (OSError, ValueError) as err:
            return refuse(f"{run}: not a readable result JSON ({type(err).__name__}).")
        if not isinstance(res, dict) or "params_sha256" not in res:
            return refuse(f"{run}: not a run's result (no params_sha256): give a RUN.json that training wrote.")
        if not weights_path(run).exists() and why_no_record(run, n=n, seed=seed) is not None:
            return refuse(f"{weights_path(run)}: not here, and no record of its row: run this where the run trained.")
        todo.append(run)
    for i, run in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {run} ...", flush=True)
        try:
            row, row_from = released_model_row(run, n=n, seed=seed, data_root=data_root, store=True)
        except (ValueError, DatasetMissingError) as err:
            return refuse(f"{run}: {err}")
        print(f"  AUC {row['auc']:.4f} (untrained null {row['null_auc']:.4f}), TPR at 1% FPR "
              f"{row['tpr_at_fpr_0.01']:.2%}, test accuracy {row['test_accuracy']:.2f}%: from {row_from}", flush=True)
    return 0
