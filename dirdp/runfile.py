"""The files of one run: the result JSON (written atomically), its checkpoint, its lock, and the stop request
that turns SIGTERM/SIGINT into "checkpoint, then stop". Nothing here knows what is trained."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import threading
from pathlib import Path

import torch

from dirdp import provenance


def check_writable(out: Path) -> None:
    """A ValueError before any work when the result ``out`` could not be written (a folder, an uncreatable or
    read-only parent): otherwise the run would be lost at its end."""
    out = Path(out)
    if out.is_dir():
        raise ValueError(f"--out {out} is a folder; give a file name, such as {out / 'result.json'}.")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out.parent):
            pass
    except OSError as err:
        above = next((p for p in (out.parent, *out.parent.parents) if p.exists()), None)
        why = (f"{above} is a file, not a folder" if above is not None and not above.is_dir()
               else f"{type(err).__name__}: {err.strerror or err}")
        raise ValueError(f"cannot write the result {out}: the folder {out.parent} cannot be created or written "
                         f"({why}). Choose another --out.") from None


def _save_atomic(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


class Interrupted(Exception):
    """A run stopped by SIGTERM/SIGINT after writing its checkpoint: rerun the same command to resume."""

    def __init__(self, out: Path, step: int, steps: int):
        super().__init__(f"{out}: interrupted at step {step} of {steps}; checkpoint {out.name}.ckpt.pt written. "
                         "Rerun the same command to resume.")
        self.step = step


class _StopRequest:
    """While active, SIGTERM and SIGINT only set a flag: the loop finishes its step, writes a checkpoint and
    stops (a budget or a scheduler's kill then loses no work). Off the main thread it does nothing."""

    def __init__(self):
        self.requested = False
        self._old = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.requested = True

    def __exit__(self, *exc):
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _lock(out: Path):
    """An exclusive lock on ``<out>.lock`` for the life of the run: two processes never train the same
    result (released by the OS when the process ends, however it ends)."""
    import fcntl

    fh = open(out.with_name(out.name + ".lock"), "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise ValueError(f"another process is training {out} right now (lock {out.name}.lock is held); "
                         "wait for it or stop it first.") from None
    return fh


def is_running(out: str | os.PathLike) -> bool:
    """Whether a process holds the training lock of result ``out`` now."""
    import fcntl

    lock = Path(str(out) + ".lock")
    if not lock.exists():
        return False
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def _write_result(result: dict, out: Path) -> None:
    """The result JSON, written atomically (a reader never sees half a file)."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(provenance.jsonable(result), indent=1, default=str, allow_nan=False) + "\n")
    os.replace(tmp, out)
