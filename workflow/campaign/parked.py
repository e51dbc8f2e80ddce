"""Checkpoints of unfinished runs kept in git history and out of the tree ("parked"), and brought back to resume.

A session that stops with runs unfinished must leave their checkpoints where the next session, in a fresh clone, finds
them. In the tree they cost twice: the working tree copied to a GPU node without network carries every tracked file
(a full-width checkpoint is 6.7 MB; two put the copy over its size cap, :mod:`workflow.campaign.travel`), and each
later version of them adds 6.7 MB to every clone. So ``bash scripts/campaign.sh save`` parks them, in two commits:

1. ``results and checkpoints as of <time>``: the results and the checkpoints (``git add -f``: they are ignored);
2. ``checkpoints parked``: the checkpoints leave the tree again, and the profile's ledger,
   ``results/campaign/<profile>/parked.json`` (:func:`ledger_path`), records each one: the result it resumes, its
   step, its bytes, the git blob that holds it and the commit that added it (:func:`record`).

History holds each checkpoint once; no tree after its commit carries it. ``bash scripts/campaign.sh start`` first
restores (``git cat-file blob``) the parked checkpoint of every run that has neither a result nor a checkpoint here
(:func:`restore`); a local checkpoint is never replaced (it is at least as far on: the parked one is an earlier copy
of it). A run that lands leaves the ledger in the commit that adds its result (:func:`prune`).

    python -m workflow.campaign.parked record --profile cpu     # after commit 1: write the ledger, list what leaves
    python -m workflow.campaign.parked restore --profile cpu    # before a start: bring the parked checkpoints back
    python -m workflow.campaign.parked prune --profile cpu      # drop the entries of runs that have their result
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from workflow.campaign.travel import git

REPO = Path(__file__).resolve().parents[2]
SUFFIX = ".ckpt.pt"


def ledger_path(root: Path, profile: str) -> Path:
    """The profile's ledger of parked checkpoints (committed; a missing one is an empty ledger)."""
    return Path(root) / "results" / "campaign" / profile / "parked.json"


def read(root: Path, profile: str) -> dict[str, dict]:
    """The ledger: result path (relative to ``root``) -> its entry (checkpoint, step, bytes, blob, commit, parked)."""
    path = ledger_path(root, profile)
    if not path.exists():
        return {}
    try:
        return dict(json.loads(path.read_text())["parked"])
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path} is not a ledger of parked checkpoints ({err}): restore it from git "
                         f"(git checkout HEAD -- {path.relative_to(root)})") from err


def write(root: Path, profile: str, entries: dict[str, dict]) -> Path:
    """Write the ledger (sorted by result path: its diffs read as runs come and go); an empty one is removed."""
    path = ledger_path(root, profile)
    if not entries:
        path.unlink(missing_ok=True)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    body = dict(profile=profile, how=__doc__.split("\n\n")[0].replace("\n", " "),
                restore="bash scripts/campaign.sh start (or: python -m workflow.campaign.parked restore "
                        f"--profile {profile})",
                parked={k: entries[k] for k in sorted(entries)})
    path.write_text(json.dumps(body, indent=1) + "\n")
    return path


def step_of(checkpoint) -> int | None:
    """The step a checkpoint is at: ``checkpoint`` a path or a file object (a blob git holds); None if it cannot be
    read as one (a half-written or foreign file: a status says "unreadable", the ledger "step unknown")."""
    try:
        import torch

        return int(torch.load(checkpoint, map_location="cpu", weights_only=False)["state"]["step"])
    except Exception:  # noqa: BLE001 - never crash a status or a save on it
        return None


def record(root: Path, profile: str, *, commit: str = "HEAD") -> list[str]:
    """After the commit ``commit`` added checkpoints of ``profile``'s unfinished runs: enter each of them in the
    ledger (its blob in that commit, the commit, its step and bytes), drop the entries of runs that have their result,
    and return the checkpoints (paths relative to ``root``) that ``commit`` tracks, for the caller to take out of the
    tree (``git rm --cached``) in the next commit."""
    root = Path(root)
    full = git(root, "rev-parse", commit)
    listed = git(root, "ls-tree", "-r", "-z", full, "--", f"results/runs/{profile}/").split("\0")
    tracked = {}
    for line in filter(None, listed):
        meta, path = line.split("\t", 1)
        if path.endswith(SUFFIX):
            tracked[path] = meta.split()[2]
    entries = prune_entries(root, read(root, profile))
    when = git(root, "show", "-s", "--format=%cI", full)  # when the commit added them
    for path, blob in sorted(tracked.items()):
        result = path.removesuffix(SUFFIX)
        if (root / result).exists():
            continue  # finished meanwhile: its checkpoint only leaves the tree
        size = int(git(root, "cat-file", "-s", blob))
        step = step_of(io.BytesIO(git(root, "cat-file", "blob", blob, binary=True)))
        entries[result] = dict(checkpoint=path, step=step, bytes=size, blob=blob, commit=full, parked=when)
    write(root, profile, entries)
    return sorted(tracked)


def prune_entries(root: Path, entries: dict[str, dict]) -> dict[str, dict]:
    """The entries whose run has no result yet."""
    return {k: v for k, v in entries.items() if not (Path(root) / k).exists()}


def prune(root: Path, profile: str) -> list[str]:
    """Drop the ledger entries of runs that have their result; return the results dropped."""
    entries = read(root, profile)
    kept = prune_entries(root, entries)
    if kept != entries:
        write(root, profile, kept)
    return sorted(set(entries) - set(kept))


def restore(root: Path, profile: str, say=print) -> list[str]:
    """Bring back the parked checkpoint of every run in the ledger that has neither a result nor a checkpoint in
    ``root``; return the checkpoints written. Raises ValueError, naming what to do, when a blob is not in this clone
    (a shallow clone) or is not what the ledger says."""
    root = Path(root)
    written = []
    for result, e in read(root, profile).items():
        ckpt = root / e["checkpoint"]
        if (root / result).exists() or ckpt.exists():
            continue
        try:
            size = int(git(root, "cat-file", "-s", e["blob"]))
        except subprocess.CalledProcessError:
            raise ValueError(f"the parked checkpoint of {result} (blob {e['blob'][:12]}, added by commit "
                             f"{e['commit'][:12]}) is not in this clone: fetch the full history (git fetch "
                             "--unshallow), or delete its entry from the ledger to start the run over") from None
        if size != e["bytes"]:
            raise ValueError(f"the parked checkpoint of {result}: blob {e['blob'][:12]} has {size:,} bytes, the "
                             f"ledger says {e['bytes']:,}: the ledger {ledger_path(root, profile)} is damaged")
        tmp = ckpt.with_name(ckpt.name + ".tmp")
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(git(root, "cat-file", "blob", e["blob"], binary=True))
        os.replace(tmp, ckpt)
        written.append(e["checkpoint"])
        say(f"campaign: restored {e['checkpoint']} (step {e['step']}, parked in {e['commit'][:12]})")
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workflow.campaign.parked",
                                description=__doc__.split("\n\n")[0].replace("\n", " "))
    p.add_argument("action", choices=("record", "restore", "prune"))
    p.add_argument("--profile", default="cpu", help="the profile whose checkpoints (default: cpu)")
    p.add_argument("--root", default=str(REPO), help="repository root (default: this one)")
    p.add_argument("--commit", default="HEAD", help="record: the commit that added the checkpoints (default HEAD)")
    args = p.parse_args(argv)
    root = Path(args.root)
    try:
        if args.action == "record":
            for path in record(root, args.profile, commit=args.commit):
                print(path)
        elif args.action == "restore":
            restore(root, args.profile, say=lambda m: print(m, file=sys.stderr))
        else:
            for result in prune(root, args.profile):
                print(f"campaign: {result} has landed: its parked checkpoint leaves the ledger", file=sys.stderr)
    except (ValueError, subprocess.CalledProcessError) as err:
        msg = err.stderr.decode().strip() if isinstance(err, subprocess.CalledProcessError) and err.stderr else err
        print(f"campaign: {msg}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
