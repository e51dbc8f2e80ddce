"""The two commands as a user meets them: scripts/setup.sh (through scripts/main.sh and scripts/test.sh) installs only
when .venv is missing or stale, quietly (pip's output in .venv/setup.log, a failure one line naming it), and
scripts/main.sh runs the DAG with no setup noise, the Snakefile saying which profile it chose. Run in a sandbox whose
.venv stands in for the real one (tests/conftest.py: script_sandbox): its pip only records what it was asked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, pip_calls, script_sandbox

INSTALL = 2  # calls of pip per install: pip itself, then dirdp with its extras and torch


def run(work: Path, script: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PROFILE", "TORCH_SPEC", "FORCE")}
    full.update(PYTHONPATH=str(work if (work / "dirdp").is_dir() else REPO), MPLBACKEND="Agg", OMP_NUM_THREADS="1",
                **env)
    return subprocess.run(["bash", script, *args], cwd=work, env=full, capture_output=True, text=True, timeout=600)


@pytest.fixture
def sandbox(tmp_path) -> Path:
    return script_sandbox(tmp_path / "clone")


def test_setup_installs_once_quietly_and_again_only_when_what_it_installs_changes(sandbox):
    first = run(sandbox, "scripts/setup.sh")
    assert first.returncode == 0 and first.stderr == "", first.stderr
    assert first.stdout.splitlines() == ["dirdp: installing dirdp and what it needs into .venv (pip's output: "
                                         ".venv/setup.log)"]
    assert len(pip_calls(sandbox)) == INSTALL
    assert "noise from pip" in (sandbox / ".venv/setup.log").read_text()  # in the log, not on the terminal
    assert (sandbox / ".venv/.dirdp-setup").read_text().strip()

    again = run(sandbox, "scripts/setup.sh")
    assert (again.returncode, again.stdout, again.stderr) == (0, "", "") and len(pip_calls(sandbox)) == INSTALL

    # another torch spec, a changed pyproject.toml: installed again (each once)
    assert run(sandbox, "scripts/setup.sh", TORCH_SPEC="torch torchvision").returncode == 0
    assert len(pip_calls(sandbox)) == 2 * INSTALL and "torch torchvision -e" in pip_calls(sandbox)[-1]
    assert run(sandbox, "scripts/setup.sh", TORCH_SPEC="torch torchvision").stdout == ""
    with (sandbox / "pyproject.toml").open("a") as fh:
        fh.write("# a new dependency\n")
    assert run(sandbox, "scripts/setup.sh").returncode == 0 and len(pip_calls(sandbox)) == 3 * INSTALL
    assert run(sandbox, "scripts/setup.sh").stdout == "" and len(pip_calls(sandbox)) == 3 * INSTALL
    assert run(sandbox, "scripts/setup.sh", FORCE="1").returncode == 0 and len(pip_calls(sandbox)) == 4 * INSTALL


def test_a_failed_setup_is_one_line_naming_its_log_and_is_redone_next_time(sandbox):
    failed = run(sandbox, "scripts/setup.sh", FAKE_PIP_RC="1")
    assert failed.returncode == 1
    assert failed.stderr.splitlines() == ["dirdp: setting up .venv failed (exit 1); what went wrong is at the end of "
                                          ".venv/setup.log"]
    assert "noise from setuptools" in (sandbox / ".venv/setup.log").read_text()
    assert not (sandbox / ".venv/.dirdp-setup").exists()  # no stamp: the next command sets up again
    calls = len(pip_calls(sandbox))
    assert run(sandbox, "scripts/setup.sh").returncode == 0 and len(pip_calls(sandbox)) > calls


@pytest.mark.slow
def test_main_runs_the_dag_without_setup_noise_and_says_which_profile_it_chose(tmp_path, tiny_root):
    from test_dag import copy_workflow

    work = script_sandbox(copy_workflow(tmp_path / "clone"))
    proc = run(work, "scripts/main.sh", "-n", "-q", "rules", DIRDP_DATA=str(tiny_root))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout + proc.stderr
    assert "noise" not in out and "Traceback" not in out
    chosen = [line for line in out.splitlines() if line.startswith("dirdp: ") and "profile" in line]
    # on a machine without a CUDA GPU (this one, unless torch sees one) the quick profile, said in one line
    from workflow.snakemake_args import has_cuda_gpu
    name = "paper" if has_cuda_gpu() else "quick"
    assert chosen == [f"dirdp: {'a CUDA GPU is here' if name == 'paper' else 'no CUDA GPU here'}: running the "
                      f"'{name}' profile (config/{name}.yaml); another: --configfile config/<name>.yaml "
                      f"({', '.join(p for p in ('cpu', 'gpu', 'paper', 'quick', 'smoke') if p != name)})"], out
    assert "train" in proc.stdout  # the plan: a fresh profile trains its runs
    # a second command finds .venv up to date: no install
    calls = len(pip_calls(work))
    assert run(work, "scripts/main.sh", "-n", "-q", "rules", DIRDP_DATA=str(tiny_root)).returncode == 0
    assert len(pip_calls(work)) == calls == INSTALL


def test_the_default_profile_is_paper_only_with_a_gpu():
    from workflow.snakemake_args import default_profile

    assert default_profile(gpu=True)[0] == "config/paper.yaml"
    path, said = default_profile(gpu=False)
    assert path == "config/quick.yaml" and said.startswith("dirdp: no CUDA GPU here: running the 'quick' profile")
    assert "--configfile config/<name>.yaml (cpu, gpu, paper, smoke)" in said


def test_a_snakemake_option_is_checked_by_snakemakes_own_parser():
    from workflow.snakemake_args import problem

    assert problem(["--cores", "all", "--resources", "gpu=1", "-n", "--forcerun", "table2_mnist"]) is None
    assert problem(["--help"]) is None and problem(["--version"]) is None  # Snakemake answers those itself
    assert problem(["--dry-rn"]) == "unrecognized arguments: --dry-rn"
    assert problem(["--cores"]) == "argument --cores/-c: expected one argument"


def test_the_readme_tells_how_snakemake_gets_on_the_path_and_the_conda_route_installs_dirdp():
    text = (REPO / "README.md").read_text()
    run_it = text[text.index("## Run it"):text.index("What they take")]
    for command in ("bash scripts/main.sh", "bash scripts/test.sh", "source .venv/bin/activate",
                    "snakemake --cores all --resources gpu=1", "jupyter lab notebooks/explore_kappa.ipynb",
                    "pytest --nbval-lax notebooks/"):
        assert command in run_it, command
    assert run_it.index("source .venv/bin/activate") < run_it.index("snakemake --cores all --resources gpu=1")
    header = (REPO / "environment.yml").read_text().split("\nname:")[0]
    conda = next(line.split("#", 1)[1].strip() for line in header.splitlines() if "conda env create" in line)
    assert f"`{conda}`" in run_it  # the line environment.yml's header gives, pip install --no-deps -e . included
    assert "pip install --no-deps -e ." in conda
    # the notebook command is the one CI runs
    assert "--nbval-lax notebooks/" in (REPO / "scripts/test.sh").read_text()
