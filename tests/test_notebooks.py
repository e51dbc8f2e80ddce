"""Every notebook's code is valid Python before nbval or the DAG spends time executing it (a broken cell
late in the audit notebook otherwise surfaces only after its 18-minute run)."""

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_code_cell_parses(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells
    for i, cell in enumerate(cells):
        try:
            ast.parse("".join(cell["source"]))
        except SyntaxError as err:
            pytest.fail(f"{path.name}, code cell {i} (id {cell.get('id')}): {err}")
