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


class RunLock:
    """The exclusive lock of one run on ``<out>.lock``, held for the life of the run: two processes never train the
    same result. :meth:`release` (or leaving the ``with`` block) deletes the file while still holding the lock, then
    closes it, so that no lock file outlives a finished, failed, refused or interrupted run; a killed process's lock
    is released by the OS (its file, left behind, locks nothing)."""

    def __init__(self, fh, path: Path):
        self._fh, self.path = fh, path

    def release(self) -> None:
        if self._fh is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # while locked: a process waiting on this file sees it was unlinked
        finally:
            self._fh.close()
            self._fh = None

    close = release  # the name the file object it replaces had

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def _lock(out: Path) -> RunLock:
    """A :class:`RunLock` on ``<out>.lock``; a ValueError when another process holds it. The file is created for
    the lock and deleted with it; a lock taken on a file that another process has just deleted (its run ended
    between our open and our lock) is retried on the new file, so two runs never both hold a lock."""
    import fcntl

    path = out.with_name(out.name + ".lock")
    while True:
        fh = open(path, "a+")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            raise ValueError(f"another process is training {out} right now (lock {out.name}.lock is held); "
                             "wait for it or stop it first.") from None
        try:
            same = os.path.samestat(os.fstat(fh.fileno()), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            return RunLock(fh, path)
        fh.close()  # we locked a file its holder had already deleted: lock the one at the path now


def is_running(out: str | os.PathLike) -> bool:
    """Whether a process holds the training lock of result ``out`` now (never creates the lock file)."""
    import fcntl

    lock = Path(str(out) + ".lock")
    try:
        fh = open(lock, "rb")
    except FileNotFoundError:
        return False
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def _write_result(result: dict, out: Path) -> None:
    """The result JSON, written atomically (a reader never sees half a file)."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(provenance.jsonable(result), indent=1, default=str, allow_nan=False) + "\n")
    os.replace(tmp, out)
