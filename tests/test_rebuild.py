"""Rebuilding tables after runs land (issue 36, item 4): `scripts/campaign.sh tables RUN.json...` forces the rules
whose jobs read those runs, asked of Snakemake (workflow.campaign.rebuild: a dry run lists each job's inputs), in a clean
checkout of HEAD with train=false: the plan is exactly what is downstream of the runs, no train job, and no file time is touched. Tried on a
fixture repository (the workflow and the committed cpu profile's outputs, runs without weights, in a temporary git
repository), never on the repository itself. And the automated commits: one per save, one per tables rebuild."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_dag import copy_workflow

from workflow.campaign import rebuild

REPO = Path(__file__).resolve().parents[1]
RUN = "results/runs/cpu/fashionmnist/alg1_eps2_seed2.json"
GPU_RUN = "results/runs/gpu/fashionmnist/alg1_eps2_seed0.json"  # full width: the cpu tables show it (also_show)

# a dry run as `snakemake -n` prints it: two runs of the profile and one it shows from another, the table of each data
# set, the summary of the profile's own runs, the index and all
DRY_RUN = """Building DAG of jobs...
Job stats:
job             count
------------  -------
all                   1
index                 1
runs_summary          1
table2_mnist          1
table4_fashionmnist   1
total                 5


rule table2_mnist:
    input: notebooks/accuracy_vs_eps.ipynb, workflow/report/objects.py, results/runs/p/mnist/alg1_eps1_seed0.json
    output: results/p/table2_mnist.csv, results/p/notebooks/table2_mnist.ipynb
    log: results/logs/p/table2_mnist.log
    jobid: 1
    reason: Forced execution
    resources: tmpdir=/tmp

rule table4_fashionmnist:
    input: notebooks/accuracy_vs_eps.ipynb, results/runs/p/fashionmnist/alg1_w0.5_eps2_seed0.json, results/runs/gpu/fashionmnist/alg1_eps2_seed0.json
    output: results/p/table4_fashionmnist.csv
    jobid: 2
    reason: Forced execution

rule runs_summary:
    input: notebooks/runs_summary.ipynb, results/runs/p/fashionmnist/alg1_w0.5_eps2_seed0.json, results/runs/p/mnist/alg1_eps1_seed0.json
    output: results/p/runs_summary.csv
    jobid: 3

rule index:
    input: results/p/table2_mnist.csv, results/p/table4_fashionmnist.csv
    output: results/p/README.md
    jobid: 4

localrule all:
    input: results/p/README.md, results/runs/p/mnist/alg1_eps1_seed0.json
    jobid: 0
    reason: Input files updated by another job: results/p/README.md
    resources: tmpdir=/tmp
Job stats:
job             count
------------  -------
all                   1
total                 5
"""


def test_the_readers_of_a_run_are_the_jobs_that_list_it_as_input():
    assert rebuild.readers(DRY_RUN, ["results/runs/p/mnist/alg1_eps1_seed0.json"]) == ["runs_summary", "table2_mnist"]
    assert rebuild.readers(DRY_RUN, ["./results/runs/p/fashionmnist/alg1_w0.5_eps2_seed0.json",
                                     "results/runs/p/mnist/alg1_eps1_seed0.json"]) == [
        "runs_summary", "table2_mnist", "table4_fashionmnist"]  # not the index: forcing reaches it downstream
    # a run of another profile that this one's tables show (also_show): its readers too, though no job here makes it
    assert rebuild.readers(DRY_RUN, ["results/runs/gpu/fashionmnist/alg1_eps2_seed0.json"]) == ["table4_fashionmnist"]
    with pytest.raises(ValueError, match="alg1_eps9_seed0.json: no job of the profile's DAG reads it"):
        rebuild.readers(DRY_RUN, ["results/runs/p/mnist/alg1_eps9_seed0.json"])
    with pytest.raises(ValueError, match="planned nothing"):
        rebuild.readers("Nothing to be done (all requested files are present and up to date).", ["x.json"])
    # a source file: the rules that read it (after a change to how a table is made)
    assert rebuild.readers(DRY_RUN, ["workflow/report/objects.py"]) == ["table2_mnist"]


AUDIT_DRY_RUN = """rule audit_released_models:
    input: notebooks/audit_released_models.ipynb, results/runs/p/mnist/alg1_eps1_seed0.json, results/runs/p/mnist/alg1_w1_eps1_seed0.json
    output: results/p/audit_released_models.csv

rule table2_mnist:
    input: notebooks/accuracy_vs_eps.ipynb, results/runs/p/mnist/alg1_eps1_seed0.json, results/runs/p/mnist/alg1_w1_eps1_seed0.json
    output: results/p/table2_mnist.csv
"""


@pytest.mark.slow
def test_a_run_without_its_weights_does_not_make_the_audit_of_released_weights_a_reader(tmp_path):
    quarter, full = "results/runs/p/mnist/alg1_eps1_seed0.json", "results/runs/p/mnist/alg1_w1_eps1_seed0.json"
    assert rebuild.weights(full) == "results/runs/p/mnist/alg1_w1_eps1_seed0.model.pt"
    assert rebuild.readers(AUDIT_DRY_RUN, [full]) == ["audit_released_models", "table2_mnist"]
    assert rebuild.readers(AUDIT_DRY_RUN, [full], frozenset([full])) == ["table2_mnist"]
    # with another run whose weights are there, the audit is rebuilt for that one
    assert rebuild.readers(AUDIT_DRY_RUN, [full, quarter], frozenset([full])) == ["audit_released_models",
                                                                                  "table2_mnist"]
    listed = subprocess.run([sys.executable, "-m", "snakemake", "--list-rules", "--configfile", "config/cpu.yaml",
                             "--config", "train=false"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert set(rebuild.WEIGHT_READERS) <= set(re.findall(r"^(\w+)", listed, re.M))  # a renamed rule fails here


@pytest.fixture(scope="module")
def fixture_repo(tmp_path_factory):
    """A git repository holding the workflow, scripts/campaign.sh and the committed cpu profile's outputs and runs
    (no weights, no checkpoints), and one run of the gpu profile that the cpu tables show (also_show), one commit;
    its .venv/bin/python is this interpreter."""
    work = copy_workflow(tmp_path_factory.mktemp("tables") / "repo", outputs=True)
    (work / GPU_RUN).parent.mkdir(parents=True, exist_ok=True)
    (work / GPU_RUN).write_text((work / RUN).read_text())
    (work / "scripts").mkdir()
    (work / "scripts" / "campaign.sh").write_text((REPO / "scripts" / "campaign.sh").read_text())
    (work / ".gitignore").write_text((REPO / ".gitignore").read_text())
    (work / ".venv" / "bin").mkdir(parents=True)
    python = work / ".venv" / "bin" / "python"  # a symlink would lose the venv's packages: a wrapper
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=work, check=True)
    subprocess.run([*git, "add", "-A"], cwd=work, check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], cwd=work, check=True)
    return work


def _tables(repo: Path, *runs: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DRY="1", MPLBACKEND="Agg", OMP_NUM_THREADS="1", DIRDP_DATA=str(repo / "no-data"))
    env.pop("PYTHONPATH", None)  # the checkout's own dirdp (the script sets PYTHONPATH to it)
    return subprocess.run(["bash", "scripts/campaign.sh", "tables", *runs], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900)


def _times(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")
            if p.is_file() and ".git" not in p.parts}


@pytest.mark.slow
def test_tables_plans_exactly_what_reads_the_runs_that_landed(fixture_repo):
    """A FashionMNIST run reaches Table 4 and what reads every run, then the index: not Table 2, not the jobs that
    read no run, no train job; the fixture's files keep their times and the checkout is gone."""
    before = _times(fixture_repo)
    proc = _tables(fixture_repo, RUN)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the fixture holds no weights: the audit of the released models cannot change, and is not forced
    readers = {"table4_fashionmnist", "width_effect", "runs_summary", "baselines_comparison", "headline"}
    assert f"campaign: forcing the rules that read these runs (and so what is downstream of them): " \
           f"{' '.join(sorted(readers))}" in proc.stdout
    assert f"campaign: not forced: audit_released_models (it audits released weights, and those of {RUN} are not " \
           "in the checkout" in proc.stderr
    planned = {m[1] for m in re.finditer(r"^(\w+)\s+1$", proc.stdout, re.M)}
    assert planned == readers | {"index", "all"}, proc.stdout
    assert "train" not in planned
    assert _times(fixture_repo) == before  # nothing written, no time set
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=fixture_repo, capture_output=True, text=True).stdout
    assert len(worktrees.strip().splitlines()) == 1  # the checkout is gone


@pytest.mark.slow
def test_tables_after_a_run_that_the_tables_show_from_another_profile(fixture_repo):
    """A gpu run (also_show): no job of the cpu profile makes it, but its tables read it; they are rebuilt, not the
    summary of the cpu profile's own runs."""
    proc = _tables(fixture_repo, GPU_RUN)
    assert proc.returncode == 0, proc.stderr[-3000:]
    planned = {m[1] for m in re.finditer(r"^(\w+)\s+1$", proc.stdout, re.M)}
    assert planned == {"table4_fashionmnist", "width_effect", "baselines_comparison", "headline", "index", "all"}, \
        proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("kept", ["weights", "record"])
def test_tables_forces_the_audit_of_released_weights_when_the_runs_weights_or_its_record_are_committed(
        fixture_repo, kept):
    """Its weights, or (full width: weights out of git) the record of the membership row they gave, made where the
    run trained: the audit of the released models can change, and is forced."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    kept_file = rebuild.weights(RUN) if kept == "weights" else rebuild.record(RUN)
    (fixture_repo / kept_file).write_bytes(b"weights")  # a dry run reads no weights: that they are there is enough
    subprocess.run([*git, "add", kept_file], cwd=fixture_repo, check=True)
    subprocess.run([*git, "commit", "-qm", kept], cwd=fixture_repo, check=True)
    try:
        proc = _tables(fixture_repo, RUN)
        assert proc.returncode == 0, proc.stderr[-3000:]
        forcing = re.search(r"^campaign: forcing the rules.*: (.*)$", proc.stdout, re.M)[1].split()
        assert "audit_released_models" in forcing and "table4_fashionmnist" in forcing
        assert "not forced" not in proc.stderr
    finally:
        subprocess.run([*git, "rm", "-q", kept_file], cwd=fixture_repo, check=True)
        subprocess.run([*git, "commit", "-qm", "no " + kept], cwd=fixture_repo, check=True)


def test_the_record_rebuild_looks_for_is_the_one_the_audit_writes():
    from workflow.audit.released import record_path

    assert rebuild.record(RUN) == str(record_path(RUN)) == RUN + ".membership"
    assert rebuild.weights(RUN) == RUN[:-len(".json")] + ".model.pt"


@pytest.mark.slow
def test_tables_refuses_a_run_that_is_not_committed_or_not_of_the_profile(fixture_repo):
    proc = _tables(fixture_repo, "results/runs/cpu/mnist/no_such_run.json")
    assert proc.returncode == 2 and "is not in HEAD" in proc.stderr and "Traceback" not in proc.stderr
    # committed, but no job of the cpu profile's DAG makes it: one line, exit 2
    stray = "results/runs/cpu/mnist/alg1_eps3_seed9.json"
    (fixture_repo / stray).write_text((fixture_repo / "results/runs/cpu/mnist/alg1_eps1_seed0.json").read_text())
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", stray], cwd=fixture_repo, check=True)
    subprocess.run([*git, "commit", "-qm", "stray"], cwd=fixture_repo, check=True)
    proc = _tables(fixture_repo, stray)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"campaign: {stray}: no job of the profile's DAG reads it" in proc.stderr


def test_tables_rewrites_no_file_time():
    text = (REPO / "scripts" / "campaign.sh").read_text()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert "touch" not in code and "mtime" not in code and "--forcerun" in code and "train=false" in code


def test_every_automated_commit_is_a_landing_a_save_point_a_parking_or_a_rebuild():
    """`git commit` appears three times in what runs unattended: the results (`land`, and `save` with the runner
    records and the checkpoints of unfinished runs), the parking of those checkpoints (`save`: they leave the tree,
    the ledger says where history holds them) and `tables` (what the DAG rebuilt); the runner never commits."""
    shell = re.compile(r"(?:^|&&|;|\|\||\()\s*git\s+(?:-[cC]\s+\S+\s+)*commit\b")  # a command, not prose
    python = re.compile(r"""["']git["'].*["']commit["']""")  # subprocess.run(["git", ..., "commit", ...])
    found = {}
    for path in [*REPO.glob("scripts/*.sh"), *REPO.glob(".ci/*"), *REPO.glob("dirdp/**/*.py"),
                 *REPO.glob("workflow/**/*.py"), *REPO.glob("rules/*.smk"), REPO / "Snakefile"]:
        for line in path.read_text().splitlines():
            if (shell if path.suffix != ".py" else python).search(line) and not line.lstrip().startswith("#"):
                found.setdefault(str(path.relative_to(REPO)), []).append(line.strip())
    assert list(found) == ["scripts/campaign.sh"] and len(found["scripts/campaign.sh"]) == 3, found
    results, parking, tables = found["scripts/campaign.sh"]
    assert '$what as of' in results and '-- "${paths[@]}"' in results
    assert "checkpoint(s) of unfinished runs parked" in parking
    assert "tables, figures and index downstream of" in tables
    script = (REPO / "scripts" / "campaign.sh").read_text()
    body = script[script.index("  save|land)"):script.index("  tables)")]
    assert 'git add -f' in body and "*.ckpt.pt" in body and "git rm -q --cached" in body
    assert body.index("git add -f") < body.index(results) < body.index("parked record") < body.index(parking)
