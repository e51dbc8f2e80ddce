"""The one renderer of the generated blocks of the README and docs/ (:mod:`workflow.report.readme`): a table from
its header and its rows, each cell as the page prints it (:func:`table`), or from a block's declaration of its
columns over a result table's rows (:func:`columns`). What a block shows (which result file, which of its rows and
columns, each cell's format) is its declaration's; how a table is written is here alone."""

from __future__ import annotations

import string
from typing import Callable

import pandas as pd


def table(header: list[str], rows) -> str:
    """``header`` (the column titles) and ``rows`` (each a list of cells, each turned into text by ``str``; a cell
    None is a cell with nothing in it, written ``| |``) as one markdown table: the header, the separator line
    ``|---|...``, a line per row."""
    return "\n".join([line(header), "|" + "---|" * len(header), *(line(row) for row in rows)])


def line(cells) -> str:
    return "|" + "|".join(" " if c is None else f" {c} " for c in cells) + "|"


class _Cell(string.Formatter):
    """str.format over a row's fields, where a format spec may also name a label of
    :data:`workflow.report.labels.FORMATS` ("{adjacency:adjacency}")."""

    def format_field(self, value, spec):
        from workflow.report.labels import FORMATS

        return FORMATS[spec](value) if spec in FORMATS else format(value, spec)


_CELL = _Cell()


def columns(rows: pd.DataFrame, spec: list[tuple[str, str | Callable[[dict], str]]]) -> str:
    """A table of ``rows``, one line each, from its columns' declaration ``spec``: (header, cell), the cell a
    template over the row's fields ("{T:,.0f}", "{adjacency:adjacency}") or a function of the row (a dict)."""
    records = rows.to_dict("records")
    return table([h for h, _ in spec], [[c(r) if callable(c) else _CELL.vformat(c, (), r) for _, c in spec]
                                        for r in records])
