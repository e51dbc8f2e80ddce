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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_notebook_is_a_clean_source(path):
    """One header convention (a markdown title first), stable unique cell ids, no stored widget state."""
    nb = json.loads(path.read_text())
    assert "widgets" not in nb["metadata"], f"{path.name} stores widget state: clear it (Widgets > Clear state)"
    ids = [c.get("id") for c in nb["cells"]]
    assert None not in ids and len(set(ids)) == len(ids), f"{path.name}: every cell needs its own stable id"
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown" and "".join(first["source"]).startswith("# ")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_papermill_sees_every_parameter(path):
    """The DAG passes parameters by name: one papermill cannot parse (an '=' in its comment, say) is reported
    as an 'unknown parameter' and its line is skipped when papermill inspects the notebook."""
    translators = pytest.importorskip("papermill.translators")
    cells = [c for c in json.loads(path.read_text())["cells"]
             if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{path.name}: one cell tagged 'parameters'"
    src = "".join(cells[0]["source"])
    assigned = {t.id for node in ast.parse(src).body if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    seen = {p.name for p in translators.PythonTranslator.inspect({"source": src})}
    assert assigned <= seen, f"{path.name}: papermill cannot parse the lines of {sorted(assigned - seen)}"
