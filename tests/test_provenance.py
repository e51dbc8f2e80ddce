"""Provenance of uncommitted code (issue 16): a "+dirty" commit comes with the files that differed and a hash of
their diff; a clean checkout records the commit alone, and outside a checkout nothing breaks."""

import subprocess

import pytest

from dirdp import provenance


def _git(repo, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # git here acts on the temporary repository only
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    (tmp_path / "code").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "code" / "a.py").write_text("x = 1\n")
    (tmp_path / "code" / "blob.bin").write_bytes(bytes(range(256)))
    (tmp_path / "README.md").write_text("hello\n")
    (tmp_path / "results" / "r.csv").write_text("a\n1\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def test_a_clean_checkout_records_its_commit_alone(repo):
    sha = _git(repo, "rev-parse", "HEAD")
    (repo / "results" / "r.csv").write_text("a\n2\n")  # outputs do not make the code dirty
    (repo / "code" / "new.py").write_text("untracked\n")  # nor do untracked files
    assert provenance.git_state(repo) == {"git_commit": sha}
    assert provenance.git_commit(repo) == sha
    assert provenance.dirty({"git_commit": sha}) is None


def test_a_dirty_checkout_records_its_files_and_a_hash_of_its_diff(repo):
    sha = _git(repo, "rev-parse", "HEAD")
    (repo / "code" / "a.py").write_text("x = 2\n")
    (repo / "results" / "r.csv").write_text("a\n2\n")
    first = provenance.git_state(repo)
    assert first["git_commit"] == sha + "+dirty"
    assert first["dirty_files"] == ["code/a.py"]
    assert len(first["dirty_diff_sha256"]) == 64
    assert provenance.git_state(repo) == first  # same changes, same hash
    (repo / "code" / "a.py").write_text("x = 3\n")
    second = provenance.git_state(repo)
    assert second["dirty_files"] == ["code/a.py"] and second["dirty_diff_sha256"] != first["dirty_diff_sha256"]
    # binary files too, staged or not, and a change anywhere in the checkout, whichever folder git runs in
    (repo / "code" / "blob.bin").write_bytes(bytes(range(255, -1, -1)))
    _git(repo, "add", "code/blob.bin")
    (repo / "README.md").write_text("changed\n")
    third = provenance.git_state(repo / "code")
    assert third["dirty_files"] == ["README.md", "code/a.py", "code/blob.bin"]
    assert third["dirty_diff_sha256"] != second["dirty_diff_sha256"]
    (repo / "code" / "blob.bin").write_bytes(bytes(range(255, -1, -1))[:-1] + b"\x01")
    assert provenance.git_state(repo)["dirty_diff_sha256"] != third["dirty_diff_sha256"]
    assert provenance.git_commit(repo / "code") == sha + "+dirty"
    assert "dirty_diff_sha256" not in provenance.git_state(repo, diff=False)
    # a rename names both files
    (repo / "code" / "a.py").write_text("x = 1\n")
    (repo / "code" / "blob.bin").write_bytes(bytes(range(256)))
    (repo / "README.md").write_text("hello\n")
    _git(repo, "add", "-u")
    assert provenance.git_state(repo) == {"git_commit": sha}
    _git(repo, "mv", "code/a.py", "code/b.py")
    assert provenance.git_state(repo)["dirty_files"] == ["code/a.py", "code/b.py"]
    _git(repo, "mv", "code/b.py", "code/a.py")
    assert provenance.git_state(repo) == {"git_commit": sha}


def test_collect_carries_the_dirty_state_and_reading_it_tolerates_old_files(repo, monkeypatch):
    (repo / "code" / "a.py").write_text("x = 2\n")
    state = provenance.git_state(repo)
    monkeypatch.setattr(provenance, "git_state", lambda: state)
    meta = provenance.collect({"eps": 1.0})
    assert meta["git_commit"].endswith("+dirty") and meta["dirty_files"] == ["code/a.py"]
    assert provenance.dirty(meta) == state
    old = {"git_commit": "bea48a20641596bc46e1cacf2425e086b362cdf1+dirty"}  # made before the files were recorded
    assert provenance.dirty(old) == dict(old, dirty_files=None, dirty_diff_sha256=None)
    # a run resumed under committed code after a session of uncommitted code is a result of uncommitted code
    clean = "a" * 40
    sessions = [{"start_step": 0, "git_commit": "b" * 40 + "+dirty"}, {"start_step": 200, "git_commit": clean}]
    assert provenance.dirty({"git_commit": clean, "sessions": sessions})["git_commit"] == "b" * 40 + "+dirty"
    assert provenance.dirty({"git_commit": clean, "sessions": sessions[1:]}) is None


def test_outside_a_checkout_the_commit_is_the_recorded_one(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.delenv("DIRDP_GIT_COMMIT", raising=False)
    assert provenance.git_state(tmp_path) == {"git_commit": "unknown"}
    monkeypatch.setenv("DIRDP_GIT_COMMIT", "abc+dirty")
    assert provenance.git_state(tmp_path) == {"git_commit": "abc+dirty+copy"}
    assert provenance.dirty(provenance.git_state(tmp_path))["dirty_files"] is None


def test_a_run_names_every_processor_it_trained_on_and_the_sessions_that_named_none():
    from dirdp.run_result import devices

    amd, intel = "cpu: AMD EPYC", "cpu: Intel(R) Xeon(R) Processor"
    assert devices({"device": amd}) == amd  # a file made before sessions were recorded
    assert devices({"device": amd, "sessions": [{"processor": amd}, {"processor": amd}]}) == amd
    moved = [{"processor": amd}, {"processor": intel}]
    assert devices({"device": intel, "sessions": moved}) == f"{amd} + {intel}"
    # sessions recorded before `processor` was: the last session's is provenance.device, the others are counted
    old = [{"start_step": 0}, {"start_step": 136}, {"start_step": 1600}]
    assert devices({"device": intel, "sessions": old}) == f"{intel} (2 of 3 sessions unrecorded)"


def test_the_cpu_is_named_with_its_bf16_units_since_one_model_name_covers_machines_4x_apart():
    from dirdp.provenance import device_name

    def info(model, flags):
        return "".join(f"processor\t: {i}\nmodel name\t: {model}\nflags\t\t: {flags}\n\n" for i in range(2))

    xeon = "Intel(R) Xeon(R) Processor"
    assert device_name(info(xeon, "fpu avx512f avx512_bf16 amx_bf16 amx_tile")) == f"cpu: {xeon} (AMX)"
    assert device_name(info(xeon, "fpu avx512f avx512_bf16")) == f"cpu: {xeon} (avx512_bf16, no AMX)"
    assert device_name(info("AMD EPYC", "fpu avx2")) == "cpu: AMD EPYC (no avx512_bf16)"
    assert device_name("model name\t: M1\n").startswith("cpu: M1") and "(" not in device_name("model name: M1\n")
