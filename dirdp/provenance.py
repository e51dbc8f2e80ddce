"""Provenance carried by every result file: config, git commit, library versions, device, time.

CSV results start with one comment line ``# provenance: {json}``; read them back with
:func:`read_csv` (or ``pandas.read_csv(path, comment="#")`` for the table alone).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import subprocess
from pathlib import Path

_PREFIX = "# provenance: "


def git_commit(cwd: str | Path | None = None) -> str:
    """HEAD's commit, suffixed "+dirty" when tracked files differ from it. Outside a git checkout (a copy
    of the tree on a GPU machine) it is ``$DIRDP_GIT_COMMIT``, which ``scripts/gpu_prepare.sh`` records
    for the campaign (suffixed "+copy": the files were not checked there), else "unknown"."""
    root = Path(cwd) if cwd else Path(__file__).resolve().parent
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        # results/ and figures/ are outputs, not code: writing them does not make a run "dirty"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                ":(top,exclude)results", ":(top,exclude)figures"], cwd=root,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        recorded = os.environ.get("DIRDP_GIT_COMMIT", "").strip()
        return f"{recorded}+copy" if recorded else "unknown"
    return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def device_name() -> str:
    """The CUDA device's name when one is visible, else the CPU's."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"cpu: {cpu}"


def collect(config: dict, *, wall_time_s: float | None = None, seed: int | None = None) -> dict:
    """Provenance record for a result produced from ``config``."""
    import numpy
    import scipy
    import torch

    import dirdp

    return {
        "config": config,
        "seed": seed,
        "git_commit": git_commit(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "wall_time_s": None if wall_time_s is None else round(wall_time_s, 3),
        "device": device_name(),
        "versions": {
            "dirdp": dirdp.__version__,
            "python": platform.python_version(),
            "numpy": numpy.__version__,
            "scipy": scipy.__version__,
            "torch": torch.__version__,
        },
    }


def jsonable(obj):
    """``obj`` with non-finite floats as the strings "inf", "-inf", "nan" (strict JSON has none)."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def write_csv(df, path: str | Path, provenance: dict) -> Path:
    """Write ``df`` to ``path`` with the provenance as its first (comment) line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fh.write(_PREFIX + json.dumps(jsonable(provenance), sort_keys=True, default=str, allow_nan=False) + "\n")
        df.to_csv(fh, index=False)
    return path


def read_csv(path: str | Path):
    """(table, provenance) of a CSV written by :func:`write_csv`."""
    import pandas as pd

    path = Path(path)
    with path.open() as fh:
        first = fh.readline()
    if not first.startswith(_PREFIX):
        raise ValueError(f"{path} has no provenance line; expected it to start with {_PREFIX!r}.")
    return pd.read_csv(path, comment="#"), json.loads(first[len(_PREFIX):])
