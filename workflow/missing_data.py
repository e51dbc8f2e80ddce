"""The one message for a profile whose data sets are not on disk (the Snakefile prints it before any job runs)."""

from __future__ import annotations

from pathlib import Path

from dirdp import data as dirdp_data
from workflow.experiments import OBJECTS


def missing_data(profile, root=None) -> dict[str, list[Path]]:
    """Data sets ``profile`` (a :class:`workflow.experiments.Profile`) needs that are not on disk: name -> files
    expected."""
    needed = sorted({OBJECTS[o].dataset for o in profile.active()})
    return {d: m for d in needed if (m := dirdp_data.missing_files(d, root))}


def present_data(profile, root=None) -> list[str]:
    """The data sets of ``profile``'s objects (whatever ``datasets`` restricts it to) that are on disk."""
    used = {OBJECTS[o].dataset for o in profile.objects}
    return [d for d in dirdp_data.SPECS if d in used and not dirdp_data.missing_files(d, root)]


def missing_data_message(missing: dict[str, list[Path]], profile: str, *, present=(), root=None) -> str:
    """One message for every missing data set, with the files expected and how to go on: run only the data
    sets ``present`` (on disk), or, where there is none, where the data root is."""
    root = dirdp_data.data_root(root)
    lines = [f"The '{profile}' profile needs data sets that are not on disk: {', '.join(missing)}."]
    for name, files in missing.items():
        spec = dirdp_data.get_spec(name)
        lines.append(f"\n{name}: expected\n" + "\n".join(f"  {f}" for f in files))
        lines.append(f"  fetch on a machine with network access: {spec.fetch.replace('<root>', str(root))}")
    todo = "Put the files there (or point $DIRDP_DATA at a folder that has them)"
    if present:
        lines.append(f"\n{todo}, or run only the data sets that are there: --config 'datasets=[{','.join(present)}]'.")
    else:
        lines.append(f"\nNone of the data sets this profile uses is under the data root {root}. {todo}.")
    return "\n".join(lines)
