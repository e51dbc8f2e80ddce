"""Facts about the packages' shape that a reviewer can check: the library (dirdp/) small and apart from the workflow
beside it (workflow/), which it never imports; no import circle among their modules (lazy imports inside functions
included), none among their packages either; no module much over 300 lines, no re-export shim, no notebook
generator, and the public API importable from the top."""

import ast
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "dirdp"  # the library
WORKFLOW = REPO / "workflow"  # the workflow beside it
FIRST_PARTY = ("dirdp", "workflow")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for root in (PKG, WORKFLOW) for p in root.rglob("*.py")}


def _resolve(name: str) -> str | None:
    """The module of ours that ``name`` (a module or a module.attribute) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


# a module named in a string, as importlib.import_module loads it: dirdp's lazy API table ("dirdp.accountant") and
# the methods registry ("dirdp.methods.alg1:ALG1")
LAZY = re.compile(r"(dirdp|workflow)(\.\w+)+(:\w+)?")


def _imports(mod: str, path: Path) -> set[str]:
    out = set()
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {_resolve(a.name) for a in node.names if a.name.startswith(FIRST_PARTY)}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if not base.startswith(FIRST_PARTY):
                continue
            for a in node.names:  # `from dirdp.x import y`: y may be a submodule
                out.add(_resolve(f"{base}.{a.name}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and LAZY.fullmatch(node.value):
            out.add(_resolve(node.value.partition(":")[0]))  # imported by name: importlib.import_module
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


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}
PACKAGES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py")
LIBRARY = {m: p for m, p in MODULES.items() if m == "dirdp" or m.startswith("dirdp.")}


def test_no_import_circle():
    # a package's __init__ re-exporting its submodules is no circle; a submodule importing its own package's
    # __init__ (which imports it back) is
    cycle = _cycle(GRAPH)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def _package_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """The imports among the members of ``package``: each of its modules, each subpackage as one node (everything
    inside it), and its own ``__init__`` as the node ``package``. A loop here (workflow.report importing dirdp.audit
    and dirdp.audit importing workflow.report, by any files) is one even where no file-level circle is."""
    depth = package.count(".") + 2

    def member(m: str) -> str | None:
        if m == package:
            return package
        return ".".join(m.split(".")[:depth]) if m.startswith(package + ".") else None

    out: dict[str, set[str]] = {}
    for m, deps in graph.items():
        if (a := member(m)) is not None:
            out.setdefault(a, set()).update(b for d in deps if (b := member(d)) not in (None, a))
    return out


def test_no_import_loop_between_packages():
    """At every level (dirdp's packages and top-level modules; the members of each package): no loop, lazy imports
    and modules imported by name included."""
    loops = {p: " -> ".join(c) for p in PACKAGES if (c := _cycle(_package_graph(GRAPH, p)))}
    assert not loops, f"package-level import loops: {loops}"


def test_the_package_level_check_sees_what_the_file_level_one_misses():
    files = {"dirdp.a.x": {"dirdp.b.y"}, "dirdp.b.z": {"dirdp.a.w"}, "dirdp.a.w": set(), "dirdp.b.y": set()}
    assert _cycle(files) is None
    assert _cycle(_package_graph(files, "dirdp")) == ["dirdp.a", "dirdp.b", "dirdp.a"]
    assert _package_graph(files, "dirdp.a") == {"dirdp.a.x": set(), "dirdp.a.w": set()}
    # the loop of issue 36 (the audit reading runs through the report, the report rendering the audit's statistics)
    # is one again if the audit imports the report's reader while the report imports the audit
    old = {**GRAPH, "workflow.audit.released": GRAPH["workflow.audit.released"] | {"workflow.report.runs"},
           "workflow.report.readme_audit": GRAPH["workflow.report.readme_audit"] | {"workflow.audit.subspace"}}
    assert set(_cycle(_package_graph(old, "workflow"))) == {"workflow.audit", "workflow.report"}
    # modules imported by name are edges: the lazy API of ``import dirdp`` and the methods registry
    assert {"dirdp.accountant", "dirdp.theory"} <= GRAPH["dirdp"]
    assert "dirdp.methods.alg1" in GRAPH["dirdp.methods"]


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_the_library_never_imports_the_workflow():
    """dirdp/ is the library: no module of it imports workflow/ (by an import statement, inside a function or by
    name), so that ``pip install .`` gives a library that runs without it; the workflow imports the library."""
    reached = {m: sorted(d for d in GRAPH[m] if d.startswith("workflow")) for m in LIBRARY}
    assert not {m: d for m, d in reached.items() if d}, reached
    text = [str(p.relative_to(REPO)) for p in LIBRARY.values()
            if re.search(r"^\s*(import workflow|from workflow\b)", p.read_text(), re.M)]
    assert text == []
    assert any(d.startswith("dirdp") for m in MODULES if m.startswith("workflow") for d in GRAPH[m])


# what replaces this process by a program or spawns one (a call of it in dirdp/ is a finding whatever its arguments),
# and what starts a process or imports a module by name (a finding when its arguments name the workflow); the name of
# a call is matched by its last part too (from os import execv; from subprocess import run)
_EXEC = ("exec", "spawn", "posix_spawn", "system", "popen")
_BY_NAME = ("subprocess.", "runpy.", "importlib.")
_BY_NAME_LAST = ("run", "call", "check_call", "check_output", "Popen", "run_module", "run_path", "import_module",
                 "__import__")


def _runs_the_workflow(source: str) -> list[str]:
    """Where ``source`` (a module) may run the workflow as a program: an exec or spawn of any process, a call that
    starts one or imports by name with the word workflow among its arguments, a "-m", "workflow" pair of strings, or
    PYTHONPATH set (a key or keyword) for a child process."""
    found = []
    for node in ast.walk(ast.parse(source)):
        strings = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            last = name.rpartition(".")[2]
            if last.startswith(_EXEC) and (name == last or name.startswith("os.")):
                found.append(f"line {node.lineno}: {name}()")
            elif ((name.startswith(_BY_NAME) or last in _BY_NAME_LAST)
                  and any(re.search(r"\bworkflow\b", s) for s in strings)):
                found.append(f"line {node.lineno}: {name}() of the workflow")
            found += [f"line {node.lineno}: PYTHONPATH=" for k in node.keywords if k.arg == "PYTHONPATH"]
        elif isinstance(node, (ast.List, ast.Tuple)):
            items = [e.value if isinstance(e, ast.Constant) else None for e in node.elts]
            if any(a == "-m" and b is not None and str(b).split(".")[0] == "workflow" for a, b in zip(items, items[1:])):
                found.append(f"line {node.lineno}: -m workflow")
        elif isinstance(node, ast.Dict):
            found += [f"line {node.lineno}: PYTHONPATH key" for k in node.keys
                      if isinstance(k, ast.Constant) and k.value == "PYTHONPATH"]
    return found


def test_the_finder_of_a_workflow_run_finds_the_old_hand_over():
    """The library once handed the workflow's commands on (os.execve of python -m workflow with the checkout on
    PYTHONPATH, else subprocess.run); each of those ways is found, and a subprocess without the workflow is not."""
    old = ("import os, subprocess, sys\n"
           "env = dict(os.environ, PYTHONPATH='x')\n"
           "cmd = [sys.executable, '-m', 'workflow', 'readme']\n"
           "os.execve(sys.executable, cmd, env)\n"
           "subprocess.run([sys.executable, '-m', 'workflow.report', 'x'])\n"
           "runpy.run_module('workflow', run_name='__main__')\n")
    assert sorted(f.partition(": ")[2] for f in _runs_the_workflow(old)) == sorted([
        "PYTHONPATH=", "-m workflow", "os.execve()", "subprocess.run() of the workflow", "-m workflow",
        "runpy.run_module() of the workflow"])
    assert _runs_the_workflow("import subprocess\nsubprocess.run(['git', 'rev-parse', 'HEAD'])\n") == []


def test_the_library_never_runs_the_workflow():
    """Nor does dirdp/ run the workflow as a program: no module of it execs or spawns a process, starts python -m
    workflow or imports the workflow by name, or puts a checkout on PYTHONPATH; python -m dirdp answers a command
    that moved to the workflow with one line saying where it went (tests/test_cli.py)."""
    found = {str(p.relative_to(REPO)): f for p in LIBRARY.values() if (f := _runs_the_workflow(p.read_text()))}
    assert found == {}, found


def test_the_library_is_small_and_holds_no_workflow():
    """The mechanism, the accountant and theory, sampling, the models, the methods, the one loop and one run, the data
    loaders, the baselines, the audit's statistics and attacks (the one-run audit's canaries, scores and bound
    included) and the explorer's views: at most 6,500 lines, with no report, campaign, profile or benchmark inside
    (those are the workflow's)."""
    lines = sum(len(p.read_text().splitlines()) for p in LIBRARY.values())
    assert lines <= 6500, f"dirdp/ has {lines} lines"
    inside = {p.name for p in PKG.iterdir()}
    assert not inside & {"report", "campaign", "bench", "experiments.py", "profile_schema.py", "snakemake_args.py"}


def test_no_re_export_shim():
    """A module imports a name to use it: no import kept only to be re-exported (``noqa: F401``), and no package's
    ``__init__`` hands on a private name of a submodule."""
    shims = [f"{p.relative_to(REPO)}: {line.strip()}" for p in MODULES.values() for line in p.read_text().splitlines()
             if "noqa: F401" in line and "only whether it imports" not in line]
    assert shims == []
    private = {}
    for m, p in MODULES.items():
        if p.name == "__init__.py":
            for node in ast.walk(ast.parse(p.read_text())):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(FIRST_PARTY):
                    if names := [a.name for a in node.names if a.name.startswith("_")]:
                        private[m] = names
    assert private == {}


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
