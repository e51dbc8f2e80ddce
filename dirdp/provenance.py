"""Provenance carried by every result file: config, git commit, library versions, device, time.

CSV results start with one comment line ``# provenance: {json}``; read them back with
:func:`read_csv` (or ``pandas.read_csv(path, comment="#")`` for the table alone).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import platform
import subprocess
from pathlib import Path

_PREFIX = "# provenance: "


# results/ and figures/ are outputs, not code: writing them does not make a run "dirty". ":(top)": the whole
# checkout, whichever folder git runs in (the package's own, by default)
_CODE = ["--", ":(top)", ":(top,exclude)results", ":(top,exclude)figures"]


def _git(root: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, check=True, timeout=60).stdout


def git_state(cwd: str | Path | None = None, *, diff: bool = True) -> dict:
    """``{"git_commit": ...}`` (see :func:`git_commit`); when the checkout is dirty also ``dirty_files``, the
    sorted paths (from the repository's root) of tracked files outside results/ and figures/ that differ from
    HEAD (``git status --porcelain``; a rename gives both names), and, with ``diff``, ``dirty_diff_sha256``, the
    SHA-256 of ``git diff --binary HEAD`` over those files: same hash, same changes. A clean checkout, or none,
    gives the commit alone."""
    root = Path(cwd) if cwd else Path(__file__).resolve().parent
    try:
        sha = _git(root, "rev-parse", "HEAD").decode().strip()
        status = _git(root, "status", "--porcelain", "-z", "--untracked-files=no", *_CODE).decode(errors="replace")
        files = set()
        entries = iter(status.split("\0"))
        for entry in entries:
            if len(entry) > 3:
                files.add(entry[3:])
                if entry[0] in "RC":  # a rename or copy: the original's name follows
                    files.add(next(entries, ""))
        files.discard("")
        if not files:
            return {"git_commit": sha}
        state = {"git_commit": sha + "+dirty", "dirty_files": sorted(files)}
        if diff:
            patch = _git(root, "diff", "--binary", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames",
                         "--src-prefix=a/", "--dst-prefix=b/", "HEAD", *_CODE)
            state["dirty_diff_sha256"] = hashlib.sha256(patch).hexdigest()
        return state
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        recorded = os.environ.get("DIRDP_GIT_COMMIT", "").strip()
        return {"git_commit": f"{recorded}+copy" if recorded else "unknown"}


def git_commit(cwd: str | Path | None = None) -> str:
    """HEAD's commit, suffixed "+dirty" when tracked files (outside results/ and figures/) differ from it. Outside
    a git checkout (a copy of the tree on a GPU machine) it is ``$DIRDP_GIT_COMMIT``, which
    ``scripts/gpu_prepare.sh`` records for the campaign (suffixed "+copy": the files were not checked there), else
    "unknown"."""
    return git_state(cwd, diff=False)["git_commit"]


def dirty(prov: dict) -> dict | None:
    """What a provenance record says of uncommitted code: None when its commit is not "+dirty", else its
    ``git_commit``, ``dirty_files`` and ``dirty_diff_sha256`` (None where not recorded: files made before
    they were). A run resumed across sessions counts as uncommitted code when any of its sessions ran such code
    (``sessions``, recorded by :func:`dirdp.training.train`; the files and diff are the last session's)."""
    commit = str(prov.get("git_commit", ""))
    if "+dirty" not in commit:
        commit = next((str(s["git_commit"]) for s in prov.get("sessions") or ()
                       if "+dirty" in str(s.get("git_commit", ""))), "")
        if not commit:
            return None
    return {"git_commit": commit, "dirty_files": prov.get("dirty_files"),
            "dirty_diff_sha256": prov.get("dirty_diff_sha256")}


def device_name(cpuinfo: str | None = None) -> str:
    """The CUDA device's name when one is visible, else the CPU's, with its bf16 units where /proc/cpuinfo lists
    them: one model name ("Intel(R) Xeon(R) Processor") covers machines whose bf16 step differs 4x, with AMX and
    without ("cpu: Intel(R) Xeon(R) Processor (AMX)", "... (avx512_bf16, no AMX)", "... (no avx512_bf16)").
    ``cpuinfo``: the text of /proc/cpuinfo (default: this machine's, and the CUDA device first)."""
    if cpuinfo is None:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(0)
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    cpu = flags = None  # the first processor's
    for line in cpuinfo.splitlines():
        if line.startswith("model name") and cpu is None:
            cpu = line.split(":", 1)[1].strip()
        if line.startswith("flags") and flags is None:
            flags = set(line.split(":", 1)[1].split())
    cpu = cpu or platform.processor() or platform.machine()
    if flags is None:  # not an x86 Linux: no flags line to read
        return f"cpu: {cpu}"
    units = "AMX" if "amx_bf16" in flags else "avx512_bf16, no AMX" if "avx512_bf16" in flags else "no avx512_bf16"
    return f"cpu: {cpu} ({units})"


def collect(config: dict, *, wall_time_s: float | None = None, seed: int | None = None) -> dict:
    """Provenance record for a result produced from ``config``."""
    import numpy
    import scipy
    import torch

    import dirdp

    return {
        "config": config,
        "seed": seed,
        **git_state(),  # git_commit; dirty_files and dirty_diff_sha256 when it ends in "+dirty"
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
