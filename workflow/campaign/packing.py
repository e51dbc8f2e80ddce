"""Packing a campaign's output into a few files of bounded size (:func:`pack`), what goes in them
(:func:`pack_list`), and putting them back into the repository (:func:`unpack`)."""

from __future__ import annotations

import io
import json
import os
import tarfile
from pathlib import Path

from dirdp.run_result import weights_path
from workflow.campaign.plan import REPO, Job, now

MIB = 1 << 20
MANIFEST = "CAMPAIGN_MANIFEST.json"  # the pack's own record: its files, what was left out, the campaign's ``meta``
NAME = "campaign.tar.gz"  # the pack's parts: campaign.tar.gz.00, .01, ...


def pack(files: list[tuple[Path, str]], dest: str | Path, *, root: Path = REPO, part_mib: float = 15.5,
         max_parts: int = 4, meta: dict | None = None) -> dict:
    """Pack ``files`` ((path, priority label) pairs, most important first) into one gzipped tar, split into at
    most ``max_parts`` files of at most ``part_mib`` MiB in ``dest`` (``campaign.tar.gz.00``, ``.01``, ...). A file
    that would not fit (sizes counted uncompressed, so the bound holds) is left out and listed. Paths are stored
    relative to ``root``, so :func:`unpack` puts them back where they were. ``meta`` goes into the pack's manifest
    (``CAMPAIGN_MANIFEST.json``): the campaign records its profile and whether it was a ``--smoke`` run
    (``smoke: true``: :func:`unpack` refuses such a pack unless told otherwise)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    budget = int(part_mib * MIB) * max_parts - 64 * 1024  # headroom for tar headers and gzip framing
    kept, left_out, used = [], [], 0
    for path, label in files:
        size = path.stat().st_size + 1024
        if used + size > budget:
            left_out.append(dict(path=str(path.resolve().relative_to(root)), label=label, bytes=size))
            continue
        used += size
        kept.append((path, label))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        manifest = json.dumps(dict(created_utc=now(), **(meta or {}),
                                   files=[str(p.resolve().relative_to(root)) for p, _ in kept], left_out=left_out),
                              indent=1).encode()
        info = tarfile.TarInfo(MANIFEST)
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        for path, _ in kept:
            tar.add(path, arcname=str(path.resolve().relative_to(root)))
    data = buf.getvalue()
    part = int(part_mib * MIB)
    parts = []
    for i in range(0, max(len(data), 1), part):
        p = dest / f"{NAME}.{len(parts):02d}"
        p.write_bytes(data[i:i + part])
        parts.append(p)
    if len(parts) > max_parts:  # cannot happen with the uncompressed bound above; never pass it silently
        raise RuntimeError(f"pack needs {len(parts)} parts, more than {max_parts}")
    return dict(parts=[str(p) for p in parts], bytes=len(data), files=len(kept), left_out=left_out)


def unpack(src: str | Path, *, root: Path = REPO, allow_smoke: bool = False) -> list[str]:
    """Put a pack made by :func:`pack` back into the repository at ``root``: only files under ``results/``
    are accepted. A pack of a ``--smoke`` campaign (its manifest says ``smoke: true``: 4-step CPU runs) is refused
    unless ``allow_smoke`` (a rehearsal unpacking into a scratch clone): its runs are no results. Returns the paths
    written."""
    src = Path(src)
    parts = sorted(src.glob(f"{NAME}.[0-9][0-9]"))
    if not parts:
        raise ValueError(f"no {NAME}.00, .01, ... in {src}: give the folder the campaign packed into.")
    data = b"".join(p.read_bytes() for p in parts)
    written = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.name != MANIFEST]
        manifest = json.loads(tar.extractfile(MANIFEST).read()) if MANIFEST in tar.getnames() else {}
        if manifest.get("smoke") and not allow_smoke:
            raise ValueError(f"{parts[0]}: a smoke pack (campaign run --smoke: {len(manifest.get('files') or [])} "
                             f"files of 4-step CPU runs, profile {manifest.get('profile')!r}): refusing to unpack it "
                             "into results/, where the campaign would count its runs as finished. "
                             "--allow-smoke unpacks it anyway (into a scratch clone: --into DIR).")
        for m in members:
            target = (root / m.name).resolve()
            if not m.isfile() or (root.resolve() / "results") not in target.parents:
                raise ValueError(f"{parts[0]}: refusing {m.name!r} (a pack holds only files under results/)")
        for m in members:
            target = root / m.name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".unpack")
            tmp.write_bytes(tar.extractfile(m).read())
            os.replace(tmp, target)
            written.append(m.name)
    return written


def pack_list(jobs: list[Job], campaign_dir: Path, *, ckpt_room: int | None = None,
              not_carried: list | None = None) -> list[tuple[Path, str]]:
    """What a campaign brings back, most important first: its own records, the result JSONs, the
    checkpoints of unfinished runs (so the next campaign run resumes them), the run logs, then the released
    models (``<stem>.model.pt``, the membership audit reads them) if room is left. ``ckpt_room``: how many bytes
    the next bundle for a GPU node can still take under its size cap (:mod:`workflow.campaign.travel`); a
    checkpoint that would not fit in it is left out, since it could never be copied back to the node to resume
    (None: no limit); its path is appended to ``not_carried``."""
    files = [(p, "campaign record") for p in sorted(campaign_dir.rglob("*")) if p.is_file()]
    files += [(j.out, "result") for j in jobs if j.status == "finished"]
    used = 0
    for j in jobs:
        if j.ckpt.exists() and not j.done():
            size = j.ckpt.stat().st_size
            if ckpt_room is not None and used + size > ckpt_room:
                if not_carried is not None:
                    not_carried.append(j.name)
                continue
            used += size
            files.append((j.ckpt, "checkpoint"))
    files += [(m, "model weights") for j in jobs if j.status == "finished" and (m := weights_path(j.out)).exists()]
    return files
