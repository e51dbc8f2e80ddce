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


# --- one notebook per kind of paper object (issue 36, item 3) ---

REPO = Path(__file__).resolve().parents[1]


def _code_lines(path: Path) -> set[str]:
    cells = json.loads(path.read_text())["cells"]
    return {line.strip() for c in cells if c["cell_type"] == "code" for line in "".join(c["source"]).splitlines()
            if line.strip() and not line.strip().startswith("#")}


def test_every_paper_object_is_made_by_the_one_notebook():
    """The ten objects differ by parameters only (their grid, the columns printed, the figure's axis: the object's
    own, workflow.report.show_columns and workflow.report.figure): one notebook, none named as an object."""
    from workflow.experiments import OBJECTS
    from workflow.report import OBJECT_NOTEBOOK

    stems = {p.stem for p in NOTEBOOKS}
    assert OBJECT_NOTEBOOK in stems and not stems & set(OBJECTS)
    assert {obj.axis for obj in OBJECTS.values()} == {"eps", "q", "lr"}
    params = [c for c in json.loads((REPO / "notebooks" / f"{OBJECT_NOTEBOOK}.ipynb").read_text())["cells"]
              if "parameters" in c["metadata"].get("tags", [])]
    assert "".join(params[0]["source"]).startswith('object_name = "table2_mnist"')  # nbval runs it: an MNIST table


def test_no_two_notebooks_are_clones():
    """Two notebooks sharing nearly all their code are one notebook with a parameter (the ten clones of issue 36 shared
    39 of 40 lines, as Table 9's and Figure 2's shared about three quarters with the eps notebook before they became
    it)."""
    import itertools

    lines = {p.stem: _code_lines(p) for p in NOTEBOOKS}
    for a, b in itertools.combinations(lines, 2):
        shared = len(lines[a] & lines[b]) / min(len(lines[a]), len(lines[b]))
        assert shared < 0.9, f"notebooks/{a}.ipynb and {b}.ipynb share {shared:.0%} of their code lines"


def _run_shared(tmp_path, name: str):
    papermill = pytest.importorskip("papermill")
    out = tmp_path / name
    out.mkdir()
    return out, papermill.execute_notebook(
        str(REPO / "notebooks" / "accuracy_vs_eps.ipynb"), str(out / f"{name}.ipynb"), cwd=str(REPO / "notebooks"),
        parameters=dict(object_name=name, results_dir=str(out), figures_dir=str(out)), progress_bar=False)


@pytest.mark.slow
def test_the_shared_notebook_writes_each_objects_table_and_figure(tmp_path, monkeypatch):
    """Run by papermill as the DAG runs it, for Table 4: its table (the object's, with provenance) and its figure
    under the paper figure's stem (fig3a_fashionmnist), its heading printed; for Table 9 (against q) and Figure 2
    (against the learning rate) the same, with their own columns and figures."""
    from dirdp import provenance
    from workflow import report
    from workflow.experiments import OBJECTS, Profile

    monkeypatch.setenv("MPLBACKEND", "Agg")
    out, nb = _run_shared(tmp_path, "table4_fashionmnist")
    table, prov = provenance.read_csv(out / "table4_fashionmnist.csv")
    expected = report.object_table(OBJECTS["table4_fashionmnist"], Profile.load(REPO / "config/cpu.yaml"),
                                   runs_root=str(REPO / "results/runs"))
    assert list(table.columns) == list(expected.columns) and len(table) == len(expected) > 0
    assert list(table.origin) == list(expected.origin) and list(table["mean"].fillna(-1)) == list(expected["mean"].fillna(-1))
    assert prov["config"]["notebook"] == "table4_fashionmnist"
    assert (out / "fig3a_fashionmnist.png").stat().st_size > 0 and (out / "fig3a_fashionmnist.pdf").exists()
    assert not (out / "table4_fashionmnist.png").exists()
    text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "Table 4 and Figure 3a: Test accuracy (%) on FashionMNIST" in text
    for name, column in (("table9_sampling_rate", "q"), ("fig2_learning_rate_vs_alpha", "lr")):
        out, nb = _run_shared(tmp_path, name)
        table, prov = provenance.read_csv(out / f"{name}.csv")
        expected = report.object_table(OBJECTS[name], Profile.load(REPO / "config/cpu.yaml"),
                                       runs_root=str(REPO / "results/runs"))
        assert list(table.columns) == list(expected.columns) and len(table) == len(expected) > 0
        assert prov["config"]["notebook"] == name
        text = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
        if name == "fig2_learning_rate_vs_alpha":  # no run here and no value printed: no figure, and it says so
            assert not (out / f"{name}.png").exists() and f"no figure: {OBJECTS[name].title} has no run here" in text
        else:
            assert (out / f"{name}.png").stat().st_size > 0
        header = next(line.split() for line in text.splitlines() if line.split()[:1] == ["method"])
        assert column in header and ("paper" in header) == (name != "fig2_learning_rate_vs_alpha"), header
