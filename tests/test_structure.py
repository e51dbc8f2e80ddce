"""Facts about the package's shape that a reviewer can check (issue 15): no import circle among dirdp's modules
(lazy imports inside functions included), no module much over 300 lines, no notebook generator, and the
public API importable from the top."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "dirdp"


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(name: str) -> str | None:
    """The dirdp module that ``name`` (a module or a module.attribute) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mod: str, path: Path) -> set[str]:
    out = set()
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {_resolve(a.name) for a in node.names if a.name.startswith("dirdp")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if not base.startswith("dirdp"):
                continue
            for a in node.names:  # `from dirdp.x import y`: y may be a submodule
                out.add(_resolve(f"{base}.{a.name}"))
    return {m for m in out if m and m != mod}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_no_import_circle():
    graph = {m: _imports(m, p) for m, p in MODULES.items()}
    # a package's __init__ re-exporting its submodules is no circle; a submodule importing its own package's
    # __init__ (which imports it back) is
    cycle = _cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_module_is_much_over_300_lines():
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > 320}
    assert not long, f"modules over ~300 lines: {long}"


def test_no_notebook_is_generated_from_strings():
    generators = [p.name for p in (REPO / "scripts").glob("*.py") if "nbformat" in p.read_text()]
    assert not generators, f"notebook generators in scripts/: {generators}; notebooks are the source"


def test_the_public_api_imports_from_the_top_without_torch_until_used():
    code = ("import sys; import dirdp; assert 'torch' not in sys.modules; "
            "from dirdp import rstar, epsilon, dirichlet_nll, PoissonSampler, kappa, PRESETS, Protocol; "
            "print(rstar(eps=1.0, alpha=3.0, q=250/60000, steps=9600, delta=1e-5))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert 0 < float(out.stdout) < 3.0
