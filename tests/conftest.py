"""Shared fixtures: the offline MNIST mirror, tiny data sets in each real on-disk format, and the smoke DAG run
once per session (tests/test_dag.py checks it)."""

import gzip
import os
import pickle
import shutil
import signal
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

# one torch thread in each xdist worker (scripts/test.sh runs a worker per core): more would only contend for the
# cores the other workers use. Its subprocesses and notebook kernels inherit it; a test that needs a count sets its own.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
REPO = Path(__file__).resolve().parents[1]


def copy_results(tmp_path: Path) -> Path:
    """The cpu profile's result files for the README's and docs' generated blocks, without the model weights (the
    blocks never read those), with ``results/timings.csv`` and, where the results have no headline_cells.csv yet
    (it comes with the headline notebook), the fixture ``tests/data/headline_cells.csv``."""
    dst = tmp_path / "results"
    shutil.copytree(REPO / "results" / "cpu", dst / "cpu")
    shutil.copytree(REPO / "results" / "runs" / "cpu", dst / "runs" / "cpu", ignore=shutil.ignore_patterns("*.pt"))
    shutil.copy(REPO / "results" / "timings.csv", dst / "timings.csv")
    if not (dst / "cpu" / "headline_cells.csv").exists():
        shutil.copy(REPO / "tests" / "data" / "headline_cells.csv", dst / "cpu" / "headline_cells.csv")
    return dst


def copy_pages(tmp_path: Path, results: Path) -> Path:
    """The README and docs/ copied beside each other into ``tmp_path``, their blocks written from ``results``: the
    copy's README."""
    from workflow.report import readme

    shutil.copy(REPO / "README.md", tmp_path / "README.md")
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    readme.update(tmp_path / "README.md", results, "cpu")
    assert readme.update(tmp_path / "README.md", results, "cpu", check=True) == []
    return tmp_path / "README.md"


FAKE_PYTHON = """#!/bin/sh
# a stand-in for .venv/bin/python: pip is recorded in .venv/pip-calls and answers with noise (exit $FAKE_PIP_RC);
# anything else runs the test suite's interpreter
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "$*" >> "$(dirname "$0")/../pip-calls"
  echo "Requirement already satisfied: noise from pip"; echo "WARNING: noise from setuptools" >&2
  exit "${{FAKE_PIP_RC:-0}}"
fi
exec "{python}" "$@"
"""


def script_sandbox(work: Path) -> Path:
    """``work`` holding what scripts/setup.sh and scripts/main.sh read (the scripts, pyproject.toml, config/) and a
    stand-in ``.venv``: its python runs this interpreter but answers ``-m pip`` with noise, recorded in
    ``.venv/pip-calls``; its snakemake runs this interpreter's Snakemake. No stamp yet: the first setup "installs"."""
    import sys

    (work / "scripts").mkdir(parents=True, exist_ok=True)
    for name in ("scripts/setup.sh", "scripts/main.sh", "pyproject.toml"):
        shutil.copy2(REPO / name, work / name)
    if not (work / "config").exists():
        shutil.copytree(REPO / "config", work / "config")
    bin_ = work / ".venv" / "bin"
    bin_.mkdir(parents=True, exist_ok=True)
    (bin_ / "python").write_text(FAKE_PYTHON.format(python=sys.executable))
    (bin_ / "snakemake").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m snakemake "$@"\n')
    for name in ("python", "snakemake"):
        (bin_ / name).chmod(0o755)
    return work


def pip_calls(work: Path) -> list[str]:
    """What the stand-in .venv of :func:`script_sandbox` was asked of pip, one call a line."""
    calls = work / ".venv" / "pip-calls"
    return calls.read_text().splitlines() if calls.exists() else []


@pytest.fixture(scope="session")
def mirror_root() -> Path:
    """``$DIRDP_DATA`` or ``../shared/datasets`` (CI sets the former to the latter)."""
    root = Path(os.environ.get("DIRDP_DATA") or SHARED)
    if not (root / "MNIST" / "raw").exists():
        if os.environ.get("CI"):  # CI always has ../shared beside the clone: a missing mirror is a failure there
            pytest.fail(f"no MNIST mirror under {root} (DIRDP_DATA={os.environ.get('DIRDP_DATA')!r})")
        pytest.skip(f"no MNIST mirror under {root}")
    return root


def pinned_torch_threads(n: int, scope: str = "function"):
    """An autouse fixture for the module that assigns it (``threads = pinned_torch_threads(1, "module")``): torch's
    intra-op threads pinned to ``n`` while the module's tests run, the count before restored after. One thread for
    tiny tensors (threads only add overhead: tenfold on a busy machine); a fixed count where a result depends on it
    (CPU kernels split reductions by thread)."""
    @pytest.fixture(scope=scope, autouse=True)
    def pinned():
        import torch
        before = torch.get_num_threads()
        torch.set_num_threads(n)
        yield
        torch.set_num_threads(before)
    return pinned


def write_idx(path: Path, array: np.ndarray) -> None:
    """An unsigned-byte IDX file (gzip-compressed if the name ends in .gz)."""
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    (gzip.open if path.suffix == ".gz" else open)(path, "wb").write(data)


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory) -> Path:
    """A data root holding tiny MNIST, FashionMNIST, CIFAR-10, SVHN and DermaMNIST files, each in
    the format its real loader reads (IDX, CIFAR pickles, SVHN .mat, MedMNIST .npz)."""
    root = tmp_path_factory.mktemp("tiny-data")
    rng = np.random.default_rng(0)
    for folder in ("MNIST", "FashionMNIST"):
        for prefix, n in (("train", 64), ("t10k", 32)):
            write_idx(root / folder / "raw" / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
            write_idx(root / folder / "raw" / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    cifar = root / "cifar-10-batches-py"
    cifar.mkdir()
    for name, n in [(f"data_batch_{i}", 16) for i in range(1, 6)] + [("test_batch", 20)]:
        # the published batches are Python 2 pickles: str keys that torchvision reads with encoding="latin1"
        batch = {"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), "labels": [int(v) for v in np.arange(n) % 10]}
        pickle.dump(batch, open(cifar / name, "wb"), protocol=2)
    pickle.dump({"label_names": [f"c{i}" for i in range(10)]}, open(cifar / "batches.meta", "wb"), protocol=2)
    from scipy.io import savemat

    (root / "SVHN").mkdir()
    for split, n in (("train", 40), ("test", 20)):
        labels = (np.arange(n) % 10 + 1).reshape(-1, 1)  # SVHN stores digit 0 as label 10
        savemat(root / "SVHN" / f"{split}_32x32.mat", {"X": rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8),
                                                       "y": labels.astype(np.uint8)})
    (root / "medmnist").mkdir()
    arrays = {}
    for split, n in (("train", 35), ("val", 14), ("test", 21)):
        arrays[f"{split}_images"] = rng.integers(0, 256, (n, 28, 28, 3), dtype=np.uint8)
        arrays[f"{split}_labels"] = (np.arange(n) % 7).reshape(-1, 1)
    np.savez(root / "medmnist" / "dermamnist.npz", **arrays)
    return root


@pytest.fixture
def kill_at_first_checkpoint():
    """``kill(proc, ckpt, timeout=180)``: SIGKILL a training process as soon as its checkpoint exists (or it
    ended, or ``timeout`` passed): what a machine that stops without warning leaves behind."""

    def kill(proc, ckpt: Path, *, timeout: float = 180.0) -> None:
        deadline = time.time() + timeout
        while not ckpt.exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    return kill


class SmokeDag(NamedTuple):
    work: Path          # the copy of the workflow the DAG ran in
    proc: object        # its finished snakemake process
    before: dict        # sha256 of the committed profile's outputs, taken before the run


@pytest.fixture(scope="session")
def smoke_dag(tmp_path_factory, mirror_root) -> SmokeDag:
    """A copy of the workflow (Snakefile, rules, config, notebooks, profiles, the package sources) and of the
    committed outputs, run end to end with config/smoke.yaml, so that the repository's results/ stay untouched.
    Run once per session (tests/test_dag.py's tests read it; one of them deletes a run to replay an interrupted DAG,
    so it runs last there)."""
    from test_dag import COMMITTED_PROFILE, copy_workflow, profile_outputs, snakemake

    work = copy_workflow(tmp_path_factory.mktemp("dag"), outputs=True)
    before = profile_outputs(work, COMMITTED_PROFILE)
    proc = snakemake("--cores", "2", "--configfile", "config/smoke.yaml", cwd=work, data=mirror_root)
    return SmokeDag(work, proc, before)


# The longest test files first: scripts/test.sh runs the suite on every core (pytest-xdist, --dist loadfile), which
# hands out whole files in collection order, so a long file collected last (the SLURM test, alphabetically late) would
# run alone at the end while the other workers idle. Within a file the order stays as written. The order follows each
# file's seconds in tests/artifacts/durations.csv, which every run writes (below; results/logs/timings/ci-durations.csv
# keeps those of the last timed CI run).
FIRST = ("test_dag.py", "test_slurm.py", "test_campaign.py", "test_rebuild.py", "test_audit.py",
         "test_checkpoint_compat.py", "test_cli.py", "test_explore_browser.py", "test_audit_first_layer.py",
         "test_lazy_imports.py", "test_training.py", "test_campaign_save.py", "audit_batchnorm.ipynb")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))


SECONDS: dict[str, float] = {}  # each test file's (or notebook's) seconds: setup, call and teardown of its tests


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::")[0]
    SECONDS[path] = SECONDS.get(path, 0.0) + report.duration


def pytest_sessionfinish(session):
    """Each file's seconds, the longest first, into tests/artifacts/durations.csv (by the process that collects the
    reports: the only one, or xdist's controller), for FIRST's order."""
    if SECONDS and not hasattr(session.config, "workerinput"):
        rows = sorted(SECONDS.items(), key=lambda kv: -kv[1])
        out = REPO / "tests" / "artifacts" / "durations.csv"
        out.parent.mkdir(exist_ok=True)
        out.write_text("file,seconds\n" + "".join(f"{name},{sec:.1f}\n" for name, sec in rows))
