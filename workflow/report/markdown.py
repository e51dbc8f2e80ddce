"""The one renderer of the generated blocks of the README and docs/ (:mod:`workflow.report.readme`): a table from
its header and its rows, each cell as the page prints it. What a block shows (which result file, which of its rows
and columns, each cell's format) is its builder's; how a table is written is here alone."""

from __future__ import annotations


def table(header: list[str], rows) -> str:
    """``header`` (the column titles) and ``rows`` (each a list of cells, each turned into text by ``str``; a cell
    None is a cell with nothing in it, written ``| |``) as one markdown table: the header, the separator line
    ``|---|...``, a line per row."""
    return "\n".join([_line(header), "|" + "---|" * len(header), *(_line(row) for row in rows)])


def _line(cells) -> str:
    return "|" + "|".join(" " if c is None else f" {c} " for c in cells) + "|"
