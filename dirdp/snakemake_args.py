"""Whether Snakemake would accept a command line, asked of its own argument parser before it runs (``scripts/main.sh``
passes its options on to snakemake): a misspelt option is one line on stderr and exit 2, instead of Snakemake's
usage block (over a hundred lines) after the setup and the DAG's start.

    python -m dirdp.snakemake_args --cores all -n        # exit 0, nothing printed
    python -m dirdp.snakemake_args --cores all --dry-rn  # exit 2: dirdp: snakemake: unrecognized arguments: --dry-rn ...
"""

from __future__ import annotations

import contextlib
import io
import sys


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
