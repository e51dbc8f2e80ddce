"""``pip install .`` installs the library alone (issue 36): its dependencies are torch, numpy, scipy and tqdm; the
extras (data, baselines, workflow, explore, test) bring the rest. Checked in a fresh venv that sees nothing but the
core's distributions (linked from this interpreter's, so nothing is downloaded): dirdp installs there with pip, the
README's library example runs, Algorithm 1 trains from the CLI, the workflow's packages cannot be imported, and a
command that needs an extra says which in one line. environment.yml (conda) lists the packages and pins of
pyproject.toml."""

import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
# what the library alone must not bring (import names): the workflow, the notebooks, the explorer, the baselines,
# the data sets' loaders, the tests
NOT_CORE = ("snakemake", "papermill", "jupyterlab", "ipykernel", "ipywidgets", "nbval", "pandas", "matplotlib",
            "seaborn", "yaml", "jsonschema", "opacus", "torchvision", "medmnist", "pytest", "hypothesis")


def requirements(extra: str | None = None, seen: frozenset = frozenset()) -> list[Requirement]:
    """The library's requirements (``extra`` None) or those of ``extra``, where ``dirdp[x,y]`` brings x's and y's."""
    out = []
    for r in map(Requirement, PROJECT["dependencies"] if extra is None else PROJECT["optional-dependencies"][extra]):
        if canonicalize_name(r.name) != "dirdp":
            out.append(r)
        for inner in sorted(r.extras - seen) if canonicalize_name(r.name) == "dirdp" else ():
            out += requirements(inner, seen | {extra, inner})
    return out


def pins(reqs) -> dict[str, str]:
    """name -> specifier; a package pinned twice must be pinned the same way."""
    out: dict[str, str] = {}
    for r in reqs:
        name, spec = canonicalize_name(r.name), str(r.specifier)
        assert out.setdefault(name, spec) == spec, f"{name} is pinned {out[name]} and {spec}"
    return out


def everything() -> dict[str, str]:
    return pins([*requirements(), *(r for extra in PROJECT["optional-dependencies"] for r in requirements(extra))])


def test_the_library_needs_torch_numpy_scipy_and_tqdm_alone():
    assert set(pins(requirements())) == {"torch", "numpy", "scipy", "tqdm"}
    assert set(PROJECT["optional-dependencies"]) == {"data", "baselines", "workflow", "explore", "test"}
    # the test suite covers the whole project: its extra brings every other
    assert set(pins(requirements("test"))) == set(everything()) - set(pins(requirements()))


def test_environment_yml_lists_the_packages_and_pins_of_pyproject():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = [p for d in env["dependencies"] if isinstance(d, dict) for p in d["pip"]]
    (python,) = [d for d in conda if re.match(r"python\b", d)]
    assert SpecifierSet(PROJECT["requires-python"]).contains(python.partition("=")[2].lstrip("=")), python
    listed = pins(Requirement(d) for d in conda + pip if d != python and d != "pip")
    assert len(listed) == len(conda) + len(pip) - 2, "a package is listed twice"
    assert listed == everything()
    # snakemake comes from bioconda (which needs conda-forge first); no channel is listed that nothing comes from
    assert env["channels"] == ["conda-forge", "bioconda"]
    assert "snakemake" in {Requirement(d).name for d in conda if d not in (python, "pip")}
    # torch from PyPI, and every package that depends on it too: conda would otherwise install its own torch for it
    on_pip = {canonicalize_name(Requirement(p).name) for p in pip}
    needs_torch = {name for name in listed if name == "torch" or "torch" in _requires(name)}
    assert needs_torch <= on_pip, needs_torch - on_pip
    assert {"torchvision", "opacus", "medmnist"} <= needs_torch  # measured here, from their metadata


def _requires(name: str) -> set[str]:
    try:
        return {canonicalize_name(Requirement(r).name) for r in md.requires(name) or [] if "extra ==" not in r}
    except md.PackageNotFoundError:
        return set()


def test_each_one_line_hint_names_an_extra_that_brings_the_package():
    from dirdp.extras import EXTRA, missing

    for module, (dist, extra) in EXTRA.items():
        assert canonicalize_name(dist) in pins(requirements(extra)), (module, dist, extra)
        assert canonicalize_name(dist) not in pins(requirements())
    err = ModuleNotFoundError("No module named 'yaml'", name="yaml")
    assert missing(err) == ("this needs pyyaml, which is not installed (the library alone does not need it): "
                            "pip install 'dirdp[workflow]' (or pip install pyyaml)")
    assert missing(ModuleNotFoundError("No module named 'torch'", name="torch")) is None  # the core: a traceback


def _closure(names) -> dict[str, md.Distribution]:
    """The distributions ``names`` need here, with everything they require (their requested extras included)."""
    env, found, done, todo = default_environment(), {}, set(), [(n, frozenset()) for n in names]
    while todo:
        name, extras = todo.pop()
        if (canonicalize_name(name), extras) in done:
            continue
        done.add((canonicalize_name(name), extras))
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:  # required by a marker that holds, but absent here: torch imports without it
            continue
        found[canonicalize_name(name)] = dist
        for r in map(Requirement, dist.requires or []):
            if r.marker is None or any(r.marker.evaluate({**env, "extra": e}) for e in ("", *extras)):
                todo.append((r.name, frozenset(r.extras)))
    return found


def _link_farm(farm: Path, names) -> None:
    """Symbolic links to the top-level files of the distributions ``names`` need (their modules and .dist-info):
    the only packages the fresh venv will see."""
    farm.mkdir()
    for dist in _closure(names).values():
        if dist.files is None:
            pytest.skip(f"{dist.metadata['Name']} lists no files (installed without a RECORD)")
        for top in {f.parts[0] for f in dist.files} - {"..", "__pycache__"}:
            if (src := Path(dist.locate_file(top))).exists() and not (farm / top).exists():
                (farm / top).symlink_to(src)


def readme_library_example() -> str:
    """The library example of the docs (issue 35 moved it from the README to docs/library.md)."""
    text = (REPO / "docs" / "library.md").read_text()
    section = text[text.index("\n## The library\n"):]
    return re.search(r"```python\n(.*?)```", section, flags=re.S)[1]


@pytest.mark.slow
def test_pip_install_dot_is_the_library_alone_and_runs_the_readme_example(tmp_path, tiny_root):
    farm, venv, src = tmp_path / "core", tmp_path / "venv", tmp_path / "src"
    build = [Requirement(r).name for r in PYPROJECT["build-system"]["requires"]]  # for --no-build-isolation
    _link_farm(farm, [r.name for r in requirements()] + build)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True, timeout=60)
    py = venv / "bin" / "python"
    site = subprocess.run([py, "-I", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], check=True,
                          capture_output=True, text=True).stdout.strip()
    (Path(site) / "core.pth").write_text(f"{farm}\n")
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "dirdp", src / "dirdp", ignore=shutil.ignore_patterns("__pycache__"))
    pip = subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps", "--no-index",
                          "--no-build-isolation", src], capture_output=True, text=True, timeout=180)
    assert pip.returncode == 0, pip.stdout + pip.stderr

    env = dict(os.environ, OMP_NUM_THREADS="1", DIRDP_DATA=str(tiny_root), MPLBACKEND="Agg")

    def run(*args, **kw):  # -I: no PYTHONPATH, no user site, not the current folder: the venv alone
        return subprocess.run([py, "-I", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                              **kw)

    probe = run("-c", "import dirdp, importlib.metadata as md, importlib.util as u, json, sys; "
                      "print(json.dumps(dict(file=dirdp.__file__, requires=md.requires('dirdp'), "
                      f"found=[n for n in {NOT_CORE!r} if u.find_spec(n)], torch='torch' in sys.modules)))")
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    assert found["file"].startswith(site)  # the installed copy, not the repository's
    assert found["found"] == [], f"the bare install can import {found['found']}"
    assert run("-c", "import workflow").returncode != 0  # the workflow is not installed with the library
    assert {canonicalize_name(Requirement(r).name) for r in found["requires"] if "extra ==" not in r} == \
        {"torch", "numpy", "scipy", "tqdm"}
    assert found["torch"] is False  # import dirdp costs nothing
    installed = sum(f.stat().st_size for f in (Path(site) / "dirdp").rglob("*") if f.is_file())
    assert installed < 5e6, f"dirdp itself installs {installed / 1e6:.1f} MB"

    (tmp_path / "example.py").write_text(readme_library_example())
    example = run("example.py")
    assert example.returncode == 0, example.stderr
    assert re.fullmatch(r"r\* = 0\.2770\d+ certifies eps = [01]\.\d{4} at RDP order \d+\nkappa at s_y = 0\.9: 0\.\d+\n",
                        example.stdout), example.stdout  # r* = 0.277068 at the MNIST protocol

    out = tmp_path / "run.json"  # the training loop, with its progress bar (tqdm)
    train = run("-m", "dirdp", "train", "--dataset", "mnist", "--eps", "1", "--steps", "3", "--q", "0.25",
                "--width", "0.0625", "--out", out)
    assert train.returncode == 0, train.stderr
    assert json.loads(out.read_text())["steps"] == 3

    # what needs an extra says which, in one line (exit 2)
    proc = run("-m", "dirdp", "train", "--dataset", "cifar10", "--eps", "1", "--steps", "1", "--width", "0.0625",
               "--no-progress", "--out", tmp_path / "c.json")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: this needs ") and "pip install 'dirdp[data]'" in line, line
    # the library alone holds no workflow: a command that moved to it says where it went, in one line (exit 2)
    assert not (Path(site) / "workflow").exists()
    for args in (("index", "--profile", "cpu", "--results", tmp_path), ("campaign", "status"), ("readme", "--check")):
        proc = run("-m", "dirdp", *args)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        (line,) = proc.stderr.strip().splitlines()
        assert line == (f"error: 'python -m dirdp {args[0]}' moved: run 'python -m workflow {args[0]}' from a "
                        "checkout of the repository"), line
