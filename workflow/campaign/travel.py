"""What is copied to a GPU node without network, and whether it fits the size cap (standard library only).

Many clusters' GPU nodes have no network: the code, the data and the wheels the node lacks are copied there, the
campaign runs under a wall-clock budget, and its results come back in files of bounded size (docs/scale.md, "A GPU
node without network"). What is copied is the working tree (the git-tracked files and the untracked files git does
not ignore) and the bundle folder ``.gpu/`` that ``scripts/gpu_prepare.sh`` fills. Where that copy is limited in
size (a transfer quota, a staging area), two numbers, in MiB, say so:

- the transfer limit (:func:`transfer_limit`: ``$DIRDP_TRANSFER_LIMIT_MIB`` or ``--transfer-limit-mib``, default
  :data:`TRANSFER_LIMIT_MIB` = 64): the most the copy to the node may weigh;
- the size cap (:func:`size_cap`: ``$DIRDP_SIZE_CAP_MIB`` or ``--size-cap-mib``, default 15/16 of the transfer
  limit, :data:`SIZE_CAP_MIB` = 60 for 64; never above the limit): a prepared bundle is refused over it, a margin
  below the limit so that a few more committed results do not tip the next bundle over the limit.

``scripts/gpu_prepare.sh`` runs ``python -m workflow.campaign.travel --carry .gpu --write .gpu/TRAVEL.json`` after
filling ``.gpu/``: it prints what travels, writes the total and the cap to ``.gpu/TRAVEL.json`` (so that on the node
the campaign packs a checkpoint only while the next bundle can still take it: :func:`measured`) and exits 2 over
the cap, naming the largest items to drop.

What a bundle needs beside the tree (:func:`carry_needed`): the raw data of the data set(s) its runs train
(:data:`DATA_BYTES`, the four ``.gz`` files of each) and the wheels of Opacus, opt_einsum and pytest
(:data:`WHEELS_BYTES_MAX`). ``tests/test_travel.py`` adds them to the tracked tree and fails over the default cap.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

MIB = 1 << 20
TRANSFER_LIMIT_MIB = 64.0  # default: the most the copy to the GPU node may weigh ($DIRDP_TRANSFER_LIMIT_MIB)
SIZE_CAP_MIB = 60.0        # default: a prepared bundle is refused over it ($DIRDP_SIZE_CAP_MIB; 15/16 of the limit)
TRANSFER_LIMIT = int(TRANSFER_LIMIT_MIB * MIB)
SIZE_CAP = int(SIZE_CAP_MIB * MIB)

# the offline mirror's files (MNIST/raw, FashionMNIST/raw: train/t10k images and labels, gzip), in bytes
DATA_BYTES = {"mnist": 1_616_508 + 4_517 + 9_719_438 + 28_857,
              "fashionmnist": 4_422_079 + 5_125 + 26_421_856 + 29_491}
# Opacus, opt_einsum, pytest, pluggy, iniconfig, packaging (pure-Python wheels; gpu_prepare.sh checks the bound)
WHEELS_BYTES_MAX = 1_500_000
# what gpu_prepare.sh bundles by default (GPU_DATASETS): the data set of the queue's first runs, FashionMNIST
# Algorithm 1 at eps = 2 (config/gpu.yaml)
DEFAULT_DATASETS = ("fashionmnist",)

REPO = Path(__file__).resolve().parents[2]


def _mib(name: str, given: float | None, env) -> float | None:
    """A size in MiB: ``given`` (a command-line option) or ``$name``; None where neither is set."""
    raw = given if given is not None else (env if env is not None else os.environ).get(name, "").strip()
    if raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        where = "--" + name.removeprefix("DIRDP_").lower().replace("_", "-") if given is not None else f"${name}"
        raise ValueError(f"{where} must be a positive number of MiB. Found {raw!r}.")
    return value


def transfer_limit(given_mib: float | None = None, env=None) -> int:
    """Bytes the copy to the GPU node may weigh: ``given_mib``, else ``$DIRDP_TRANSFER_LIMIT_MIB``, else
    :data:`TRANSFER_LIMIT_MIB`."""
    return int((_mib("DIRDP_TRANSFER_LIMIT_MIB", given_mib, env) or TRANSFER_LIMIT_MIB) * MIB)


def size_cap(given_mib: float | None = None, env=None, *, limit_mib: float | None = None) -> int:
    """Bytes a prepared bundle is refused over: ``given_mib``, else ``$DIRDP_SIZE_CAP_MIB``, else 15/16 of the
    transfer limit (:func:`transfer_limit`, ``limit_mib`` given or from the environment); never above the limit."""
    limit = transfer_limit(limit_mib, env)
    cap = _mib("DIRDP_SIZE_CAP_MIB", given_mib, env)
    if cap is None:
        return limit * 15 // 16
    if cap * MIB > limit:
        raise ValueError(f"the size cap ({cap:g} MiB) is above the transfer limit ({limit / MIB:g} MiB): set "
                         "$DIRDP_SIZE_CAP_MIB (--size-cap-mib) at or below $DIRDP_TRANSFER_LIMIT_MIB "
                         "(--transfer-limit-mib)")
    return int(cap * MIB)


def git(root: Path, *args: str, binary: bool = False) -> str | bytes:
    """What ``git ARGS`` run in ``root`` prints: bytes with ``binary``, else text without its surrounding blanks."""
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, check=True).stdout
    return out if binary else out.decode().strip()


def _listed(root: Path, *args: str) -> dict[str, int]:
    """The files ``git ls-files ARGS`` lists that exist in the working tree, path -> bytes."""
    paths = (root / p for p in git(root, "ls-files", "-z", *args, binary=True).decode().split("\0") if p)
    return {str(p.relative_to(root)): p.lstat().st_size for p in paths if p.is_file() or p.is_symlink()}


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
    return _listed(root, "--cached")


def untracked(root: Path = REPO) -> dict[str, int]:
    """Untracked files git does not ignore (they travel too), path -> bytes."""
    return _listed(root, "--others", "--exclude-standard")


def travelling(root: Path = REPO, carry: tuple[str, ...] = (".gpu",)) -> dict:
    """What a copy of the working tree with ``carry`` weighs: bytes of the tracked tree, of the untracked-not-ignored
    files and of each carried path (and, for the carry, its top two levels of folders), and the total."""
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
                untracked_bytes=sum(u.values()), carry=carried, total_bytes=total,
                largest_tracked=sorted(t.items(), key=lambda kv: -kv[1])[:8],
                untracked=sorted(u.items(), key=lambda kv: -kv[1])[:8])


def carry_needed(datasets=DEFAULT_DATASETS) -> int:
    """Bytes a bundle whose runs train ``datasets`` needs beside the tree: their raw data and the wheels."""
    return sum(DATA_BYTES[d] for d in datasets) + WHEELS_BYTES_MAX


def over_size_cap(root: Path = REPO, datasets=DEFAULT_DATASETS, cap: int | None = None) -> str | None:
    """One line if the tracked (and staged) tree plus a bundle's data and wheels for ``datasets`` passes the size
    cap (``cap`` bytes, else :func:`size_cap`), else None: ``scripts/campaign.sh save`` says it before committing a
    checkpoint (tests/test_travel.py would fail on it at the default cap)."""
    try:
        cap = size_cap() if cap is None else cap
    except ValueError as err:
        return str(err)
    t = tracked(root)
    total = sum(t.values()) + carry_needed(datasets)
    if total <= cap:
        return None
    big = ", ".join(f"{k} ({v:,})" for k, v in sorted(t.items(), key=lambda kv: -kv[1])[:3])
    return (f"the tracked tree ({sum(t.values()):,} bytes) plus a GPU bundle's data and wheels "
            f"({carry_needed(datasets):,}) is {total - cap:,} bytes over the size cap, {cap / MIB:g} MiB: "
            f"tests/test_travel.py fails until something tracked shrinks; the largest: {big}")


def measured(root: Path = REPO) -> tuple[int | None, int]:
    """What ``scripts/gpu_prepare.sh`` measured of the bundle this tree came in (``.gpu/TRAVEL.json``: its bytes,
    None without one) and the size cap it was prepared under (else :func:`size_cap` here)."""
    path = root / ".gpu" / "TRAVEL.json"
    rec = json.loads(path.read_text()) if path.exists() else {}
    total = rec.get("total_bytes")
    return (None if total is None else int(total)), int(rec.get("size_cap_bytes") or size_cap())


def report(t: dict, cap: int, limit: int) -> str:
    lines = [f"travels: {t['total_bytes']:,} bytes ({t['total_bytes'] / MIB:.1f} MiB; size cap {cap / MIB:g} MiB, "
             f"transfer limit {limit / MIB:g} MiB)",
             f"  tracked: {t['tracked_files']} files, {t['tracked_bytes']:,} bytes",
             f"  untracked, not ignored: {t['untracked_files']} files, {t['untracked_bytes']:,} bytes"]
    lines += [f"  carried {k}: {v:,} bytes" for k, v in t["carry"].items() if k.count("/") <= 2]
    return "\n".join(lines)


def advice(t: dict, cap: int) -> str:
    """What to drop, largest first, when ``t`` is over the size cap ``cap``."""
    over = t["total_bytes"] - cap
    lines = [f"{over:,} bytes over the size cap, {cap / MIB:g} MiB: drop some of these (largest first), or raise "
             "the cap (--size-cap-mib, $DIRDP_SIZE_CAP_MIB) if your transfer takes more:"]
    deep = [(k, v) for k, v in t["carry"].items() if k.count("/") == 2]
    lines += [f"  carried   {v:>12,}  {k}  " + ("(a data set this campaign need not train: GPU_DATASETS=...)"
                                                 if "/data/" in k else "(bundled by scripts/gpu_prepare.sh)")
              for k, v in sorted(deep, key=lambda kv: -kv[1])[:4]]
    lines += [f"  untracked {v:>12,}  {k}  (commit it, ignore it or remove it)" for k, v in t["untracked"][:4]]
    lines += [f"  tracked   {v:>12,}  {k}  (git rm --cached, and ignore it)" for k, v in t["largest_tracked"][:5]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m workflow.campaign.travel", description=__doc__.split("\n\n")[0])
    p.add_argument("--carry", nargs="*", default=[".gpu"], help="carried paths (default: .gpu)")
    p.add_argument("--root", default=str(REPO), help="repository root (default: this one)")
    p.add_argument("--write", help="write the measurement to this JSON file (e.g. .gpu/TRAVEL.json)")
    p.add_argument("--transfer-limit-mib", type=float, metavar="MIB",
                   help=f"the most the copy to the GPU node may weigh (default: $DIRDP_TRANSFER_LIMIT_MIB, else "
                        f"{TRANSFER_LIMIT_MIB:g})")
    p.add_argument("--size-cap-mib", type=float, metavar="MIB",
                   help="refuse over this many MiB (default: $DIRDP_SIZE_CAP_MIB, else 15/16 of the transfer limit: "
                        f"{SIZE_CAP_MIB:g} for {TRANSFER_LIMIT_MIB:g}); at most the transfer limit")
    args = p.parse_args(argv)
    try:
        limit = transfer_limit(args.transfer_limit_mib)
        cap = size_cap(args.size_cap_mib, limit_mib=args.transfer_limit_mib)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    t = travelling(Path(args.root), tuple(args.carry))
    print(report(t, cap, limit))
    if args.write:
        Path(args.write).write_text(json.dumps(dict(total_bytes=t["total_bytes"], tracked_bytes=t["tracked_bytes"],
                                                    untracked_bytes=t["untracked_bytes"], carry=t["carry"],
                                                    size_cap_bytes=cap, transfer_limit_bytes=limit),
                                               indent=1) + "\n")
    if t["total_bytes"] > cap:
        print("error: " + advice(t, cap), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
