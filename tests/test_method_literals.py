"""Methods know themselves (issue 36): outside :mod:`dirdp.methods` (and the profiles and tests) no code names a
method by its key or its label; report, audit, bench, experiments, notebooks and rules ask the registry
(:mod:`dirdp.methods`: its constants, :func:`~dirdp.methods.spec`, :func:`~dirdp.methods.label`, ...).

A literal is a string constant equal to a method key or label (``"alg1"``, ``"Algorithm 1"``), in a .py module of
dirdp, a code cell of a notebook (but its ``parameters`` cell: default profile values), the Snakefile, a rule file or
a script. Docstrings and comments are not literals."""

import ast
import json
import re
from pathlib import Path

from dirdp import methods

REPO = Path(__file__).resolve().parents[1]
WORDS = frozenset(methods.NAMES) | frozenset(methods.LABELS.values())
QUOTED = re.compile(r"""(["'])(.*?)\1""")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (or bare string statements)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def python_literals(source: str) -> list[tuple[int, str]]:
    """(line, value) of each string constant in ``source`` equal to a method key or label, docstrings left out."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            if node.value in WORDS:
                found.append((node.lineno, node.value))
    return sorted(found)


def text_literals(source: str) -> list[tuple[int, str]]:
    """(line, value) of each quoted string equal to a method key or label in ``source`` (a Snakemake file, a shell
    script), comments left out."""
    found = []
    for i, line in enumerate(source.splitlines(), 1):
        code = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
        found += [(i, m.group(2)) for m in QUOTED.finditer(code) if m.group(2) in WORDS]
    return found


def _notebook_code(path: Path) -> list[tuple[int, str]]:
    """(cell index, source) of each code cell, IPython magics and shell lines blanked; not the cell tagged
    ``parameters``: the notebook's default profile values (what papermill overrides from config/<profile>.yaml), as
    allowed to name methods as the profiles are."""
    cells = json.loads(path.read_text())["cells"]
    out = []
    for i, c in enumerate(cells):
        if c["cell_type"] == "code" and "parameters" not in c.get("metadata", {}).get("tags", ()):
            src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            out.append((i, "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in src.splitlines())))
    return out


def literals() -> list[str]:
    """file:line of every method literal where none may be."""
    out = []
    for p in sorted([*(REPO / "dirdp").rglob("*.py"), *(REPO / "workflow").rglob("*.py")]):
        if (REPO / "dirdp" / "methods") in p.parents:
            continue
        out += [f"{p.relative_to(REPO)}:{ln}: {v!r}" for ln, v in python_literals(p.read_text())]
    for p in sorted((REPO / "notebooks").glob("*.ipynb")):
        for cell, src in _notebook_code(p):
            out += [f"{p.relative_to(REPO)}: cell {cell} line {ln}: {v!r}" for ln, v in python_literals(src)]
    rules = [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
    for p in [*rules, *sorted(q for q in (REPO / "scripts").rglob("*") if q.is_file())]:
        if p.suffix == ".py":
            found = python_literals(p.read_text())
        else:
            found = text_literals(p.read_text(errors="replace"))
        out += [f"{p.relative_to(REPO)}:{ln}: {v!r}" for ln, v in found]
    return out


def test_no_method_literal_outside_the_registry():
    found = literals()
    assert not found, f"{len(found)} method literals outside dirdp/methods/ (ask dirdp.methods):\n" + "\n".join(found)


def test_the_scan_finds_a_literal():
    src = ('"""A docstring naming alg1 and "Algorithm 1" is no literal."""\n'
           'def f(run):\n'
           '    """Nor is "dpsgd" in a function\'s docstring."""\n'
           '    # "latent" in a comment is not either\n'
           '    if run.method == "alg1":\n'
           '        return {"DP-SGD": 1}\n'
           '    return "alg1 and more"\n')
    assert python_literals(src) == [(5, "alg1"), (6, "DP-SGD")]
    assert text_literals('x = [p for p in RUNS if RUNS[p].method != "latent"]  # "tempered"\n# "alg1"\n') == \
        [(1, "latent")]
    assert {"alg1", "Algorithm 1", "tempered", "LATENT"} <= WORDS


def test_the_scan_reads_notebook_cells(tmp_path):
    nb = dict(cells=[dict(cell_type="markdown", source=['"alg1"']),
                     dict(cell_type="code", metadata=dict(tags=["parameters"]), source=['methods = ["alg1"]\n']),
                     dict(cell_type="code", source=["%matplotlib inline\n", 'm = "dpsgd"\n'])])
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb))
    assert [python_literals(src) for _, src in _notebook_code(path)] == [[(2, "dpsgd")]]
