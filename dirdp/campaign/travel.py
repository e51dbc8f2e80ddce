"""What a device call carries, by the device's own rule, and whether it fits (standard library only).

The GPU machine receives the working tree: the git-tracked files, the untracked files git does not ignore, and
the ``carry`` paths (here ``.gpu/``), at most 64 MiB in all, or the call is refused. This project refuses over
:data:`REFUSE_OVER` (60 MiB), so that a few more committed results never tip a prepared call over the device's
limit. ``scripts/gpu_prepare.sh`` runs ``python -m dirdp.campaign.travel --carry .gpu`` after filling ``.gpu/``: it
prints what travels, writes the total to ``.gpu/TRAVEL.json`` (so that the campaign packs a checkpoint only while
the next call can carry it) and exits 2 over the limit, naming the largest items to drop.

The carry a first call needs (:func:`carry_needed`): the raw data of the data set(s) it trains
(:data:`DATA_BYTES`, the four ``.gz`` files of each) and the wheels of Opacus, opt_einsum and pytest
(:data:`WHEELS_BYTES_MAX`). ``tests/test_travel.py`` adds them to the tracked tree and fails over the limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MIB = 1 << 20
DEVICE_LIMIT = 64 * MIB  # the device's own limit on the working tree that travels
REFUSE_OVER = 60 * MIB   # ours: a prepared call leaves this much room below it

# the offline mirror's files (MNIST/raw, FashionMNIST/raw: train/t10k images and labels, gzip), in bytes
DATA_BYTES = {"mnist": 1_616_508 + 4_517 + 9_719_438 + 28_857,
              "fashionmnist": 4_422_079 + 5_125 + 26_421_856 + 29_491}
DATA_FOLDER = {"mnist": "MNIST", "fashionmnist": "FashionMNIST"}
# Opacus, opt_einsum, pytest, pluggy, iniconfig, packaging (pure-Python wheels; gpu_prepare.sh checks the bound)
WHEELS_BYTES_MAX = 1_500_000
# the first call trains the queue's first runs: FashionMNIST Algorithm 1 at eps = 2 (config/gpu.yaml)
FIRST_CALL_DATASETS = ("fashionmnist",)

REPO = Path(__file__).resolve().parents[2]


def _git_files(root: Path, *args: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", *args], cwd=root, capture_output=True, check=True).stdout
    return [root / p for p in out.decode().split("\0") if p]


def _size(path: Path) -> int:
    """Bytes of a file, or of every file under a folder (links counted as links, as they travel)."""
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += (Path(dirpath) / name).lstat().st_size
    return total


def tracked(root: Path = REPO) -> dict[str, int]:
    """Git-tracked files that exist in the working tree, path -> bytes."""
    return {str(p.relative_to(root)): p.lstat().st_size for p in _git_files(root, "--cached")
            if p.is_file() or p.is_symlink()}


def untracked(root: Path = REPO) -> dict[str, int]:
    """Untracked files git does not ignore (they travel too), path -> bytes."""
    return {str(p.relative_to(root)): p.lstat().st_size for p in _git_files(root, "--others", "--exclude-standard")
            if p.is_file() or p.is_symlink()}


def travelling(root: Path = REPO, carry: tuple[str, ...] = (".gpu",)) -> dict:
    """What a device call with ``carry`` sends: bytes of the tracked tree, of the untracked-not-ignored files and of
    each carried path (and, for the carry, its top two levels of folders), and the total."""
    t, u = tracked(root), untracked(root)
    carried = {}
    for c in carry:
        p = root / c
        if not p.exists():
            continue
        carried[c] = _size(p)
        for sub in sorted(p.iterdir()) if p.is_dir() else []:
            carried[f"{c}/{sub.name}"] = _size(sub)
            if sub.is_dir():
                for subsub in sorted(sub.iterdir()):
                    carried[f"{c}/{sub.name}/{subsub.name}"] = _size(subsub)
    total = sum(t.values()) + sum(u.values()) + sum(carried[c] for c in carry if c in carried)
    return dict(tracked_files=len(t), tracked_bytes=sum(t.values()), untracked_files=len(u),
                untracked_bytes=sum(u.values()), carry=carried, total_bytes=total, refuse_over=REFUSE_OVER,
                device_limit=DEVICE_LIMIT, largest_tracked=sorted(t.items(), key=lambda kv: -kv[1])[:8],
                untracked=sorted(u.items(), key=lambda kv: -kv[1])[:8])


def carry_needed(datasets=FIRST_CALL_DATASETS) -> int:
    """Bytes the carry of a call training ``datasets`` needs: their raw data and the wheels."""
    return sum(DATA_BYTES[d] for d in datasets) + WHEELS_BYTES_MAX


def first_call_over(root: Path = REPO, datasets=FIRST_CALL_DATASETS) -> str | None:
    """One line if the tracked (and staged) tree plus the first call's carry passes :data:`REFUSE_OVER`, else None:
    ``scripts/campaign.sh save`` says it before committing a checkpoint (tests/test_travel.py would fail on it)."""
    t = tracked(root)
    total = sum(t.values()) + carry_needed(datasets)
    if total <= REFUSE_OVER:
        return None
    big = ", ".join(f"{k} ({v:,})" for k, v in sorted(t.items(), key=lambda kv: -kv[1])[:3])
    return (f"the tracked tree ({sum(t.values()):,} bytes) plus a first GPU call's carry ({carry_needed(datasets):,}) "
            f"is {total - REFUSE_OVER:,} bytes over {REFUSE_OVER / MIB:.0f} MiB: tests/test_travel.py fails until "
            f"something tracked shrinks; the largest: {big}")


def report(t: dict) -> str:
    lines = [f"travels: {t['total_bytes']:,} bytes ({t['total_bytes'] / MIB:.1f} MiB; refused over "
             f"{REFUSE_OVER / MIB:.0f} MiB here, {DEVICE_LIMIT / MIB:.0f} MiB on the device)",
             f"  tracked: {t['tracked_files']} files, {t['tracked_bytes']:,} bytes",
             f"  untracked, not ignored: {t['untracked_files']} files, {t['untracked_bytes']:,} bytes"]
    lines += [f"  carried {k}: {v:,} bytes" for k, v in t["carry"].items() if k.count("/") <= 2]
    return "\n".join(lines)


def advice(t: dict) -> str:
    """What to drop, largest first, when ``t`` is over the limit."""
    over = t["total_bytes"] - REFUSE_OVER
    lines = [f"{over:,} bytes over {REFUSE_OVER / MIB:.0f} MiB: drop some of these (largest first):"]
    deep = [(k, v) for k, v in t["carry"].items() if k.count("/") == 2]
    lines += [f"  carried   {v:>12,}  {k}  (a data set the call does not train: GPU_DATASETS=...)" for k, v in
              sorted(deep, key=lambda kv: -kv[1])[:4]]
    lines += [f"  untracked {v:>12,}  {k}  (commit it, ignore it or remove it)" for k, v in t["untracked"][:4]]
    lines += [f"  tracked   {v:>12,}  {k}  (git rm --cached, and ignore it)" for k, v in t["largest_tracked"][:5]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m dirdp.campaign.travel", description=__doc__.split("\n\n")[0])
    p.add_argument("--carry", nargs="*", default=[".gpu"], help="carried paths (default: .gpu)")
    p.add_argument("--root", default=str(REPO), help="repository root (default: this one)")
    p.add_argument("--write", help="write the measurement to this JSON file (e.g. .gpu/TRAVEL.json)")
    args = p.parse_args(argv)
    t = travelling(Path(args.root), tuple(args.carry))
    print(report(t))
    if args.write:
        Path(args.write).write_text(json.dumps(dict(total_bytes=t["total_bytes"], tracked_bytes=t["tracked_bytes"],
                                                    untracked_bytes=t["untracked_bytes"], carry=t["carry"]),
                                               indent=1) + "\n")
    if t["total_bytes"] > REFUSE_OVER:
        print("error: " + advice(t), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
