"""What a Snakemake command line of this workflow gets before anything runs: the profile it runs without
``--configfile`` (:func:`default_profile`: paper with a CUDA GPU, else quick; the Snakefile says which), and whether
Snakemake accepts its options, asked of Snakemake's own argument parser (``scripts/main.sh`` passes its options on to
snakemake): a misspelt option is one line on stderr and exit 2, instead of Snakemake's usage block (over a hundred
lines) after the setup and the DAG's start.

    python -m workflow.snakemake_args --cores all -n        # exit 0, nothing printed
    python -m workflow.snakemake_args --cores all --dry-rn  # exit 2: dirdp: snakemake: unrecognized arguments: --dry-rn ...
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

from workflow.profile_schema import profiles

# Device nodes of a GPU that torch may drive (NVIDIA's; ROCm's /dev/kfd; WSL's /dev/dxg). Where none exists there is no
# GPU, and the second or two that importing torch costs every Snakemake start is saved.
GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd", "/dev/dxg")


def has_cuda_gpu() -> bool:
    """Whether torch sees a CUDA GPU here (``torch.cuda.is_available()``), asked only where a GPU device node exists."""
    if not any(os.path.exists(node) for node in GPU_NODES):
        return False
    import torch

    return torch.cuda.is_available()


def default_profile(gpu: bool | None = None) -> tuple[str, str]:
    """The profile a Snakemake command without ``--configfile`` runs, and the line that says so: the paper profile
    where there is a CUDA GPU (``gpu``; None: :func:`has_cuda_gpu`), else the quick profile, whose whole DAG runs on
    a CPU in minutes (the paper profile's full-width runs on a CPU would take weeks)."""
    gpu = has_cuda_gpu() if gpu is None else gpu
    name, why = ("paper", "a CUDA GPU is here") if gpu else ("quick", "no CUDA GPU here")
    others = ", ".join(p for p in profiles() if p != name)
    return (f"config/{name}.yaml",
            f"dirdp: {why}: running the '{name}' profile (config/{name}.yaml); "
            f"another: --configfile config/<name>.yaml ({others})")


class _Refused(Exception):
    pass


def problem(argv: list[str]) -> str | None:
    """What Snakemake's parser says is wrong with ``argv`` (its message, one line), or None where it takes them
    (``--help`` and ``--version`` included: Snakemake answers those itself)."""
    from snakemake.cli import get_argument_parser

    parser = get_argument_parser()

    def refuse(message: str):
        raise _Refused(" ".join(message.split()))

    parser.error = refuse
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            parser.parse_args(argv)
    except _Refused as refused:
        return str(refused)
    except SystemExit as exit_:  # --help, --version: printed (here, into nothing) and exit 0
        return None if not exit_.code else f"exit {exit_.code}"
    return None


def main(argv: list[str] | None = None) -> int:
    said = problem(sys.argv[1:] if argv is None else argv)
    if said is None:
        return 0
    print(f"dirdp: snakemake: {said} (its options: snakemake --help)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
