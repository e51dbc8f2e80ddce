"""The repository speaks to its users: what they can run, on their own machines, and where each number comes from.
Words that describe how the repository happened to be worked on instead (a lent or borrowed machine, a tool's call
syntax, "the first call", a work log's "stop 43, landed" as the source of a timing) are no use to a researcher with
a GPU cluster. Every tracked file outside tests/ is searched with ``git grep`` (README, docs, code, scripts, config,
notebooks, and of results/ the CSVs and READMEs, not the run records), and a hit fails, naming file:line."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="no git checkout")

# case-insensitive extended regular expressions (git grep -i -E); no \b, which not every regex library knows
PROCESS_WORDS = [
    r"device call", r"borrowed", r"run\(command", r"the device's", r"issues stops", r"stop [0-9]+, landed",
    r"borrow", r"(^|[^a-z])len(d|ds|ding|t)([^a-z]|$)", r"first[- ]call", r"next call", r"DEVICE_LIMIT",
    r"carry=\[", r"files_at",
]


def _scanned(path: str) -> bool:
    """Whether a tracked path speaks to users: not a test, and of results/ only the tables and their READMEs."""
    if path.startswith("tests/"):
        return False
    return not path.startswith("results/") or path.endswith((".csv", ".md"))


def process_words(root: Path) -> list[str]:
    """``file:line: text`` for every line of a scanned tracked file (as it is in the working tree) that has one of
    :data:`PROCESS_WORDS`."""
    args = ["git", "grep", "-n", "-I", "-i", "-E"]
    for word in PROCESS_WORDS:
        args += ["-e", word]
    done = subprocess.run([*args, "--", ".", ":(exclude)tests"], cwd=root, capture_output=True, text=True)
    assert done.returncode in (0, 1), done.stderr  # 1: no line matched
    return [line for line in done.stdout.splitlines() if _scanned(line.split(":", 1)[0])]


def test_no_tracked_file_outside_tests_speaks_of_how_the_repository_was_worked_on():
    hits = process_words(REPO)
    assert not hits, ("these lines speak of how the repository was worked on, not to its users; say what a user "
                      "does (a GPU node without network, a command, a commit):\n" + "\n".join(hits))


def test_the_scan_names_file_and_line_and_leaves_tests_and_run_records_alone(tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    files = {"README.md": "# A tool\n\nThen the device call, exactly:\n",
             "docs/a.md": "A blended calendar of lenders is fine.\nWe lent it.\n",
             "dirdp/x.py": "x = 1\nDEVICE_LIMIT = 64  # the first call\n",
             "results/timings.csv": "command,source\nbash .ci/run,\"issues stops: stop 43, landed\"\n",
             "results/runs/a.json": '{"note": "the first call"}\n',
             "tests/test_x.py": "# the device call, on a borrowed H200\n"}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run([*git, "add", "-A"], cwd=tmp_path, check=True)
    (tmp_path / "untracked.md").write_text("a borrowed machine\n")  # not tracked: not the repository's
    hits = process_words(tmp_path)
    assert [":".join(h.split(":")[:2]) for h in hits] == [
        "README.md:3", "dirdp/x.py:2", "docs/a.md:2", "results/timings.csv:2"], hits
