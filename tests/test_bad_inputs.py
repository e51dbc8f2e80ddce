"""The table of bad inputs in docs/errors.md is what the commands do (issue 16, part 3; the README's section until
issue 35 moved it).

Every row of the table on that page ("What a mistake gets") is run here: ``python -m dirdp ...`` and ``python -m
workflow ...`` in-process, ``snakemake`` rows as a subprocess. Each must exit with the code the table gives and print
the message it gives: the first line of standard error that is not argparse's usage (a cell ending in "…" is a
prefix), never a traceback. The placeholders ({tmp}, {tiny}, ...) are made by the fixture below and named in the page's legend.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import pip_calls, script_sandbox, write_idx

REPO = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| `(?P<cmd>(?:python -m (?:dirdp|workflow)|snakemake|(?:PROFILE=\S+ )?bash scripts/main\.sh) [^`]+)`(?: [^|]*)? "
                 r"\| (?P<rc>\d+) \| (?P<msg>.+) \|$")


def rows() -> list[tuple[str, int, str]]:
    section = (REPO / "docs" / "errors.md").read_text()
    assert section.startswith("# What a mistake gets\n"), "docs/errors.md is the page of the bad-inputs table"
    found = [(m["cmd"], int(m["rc"]), m["msg"].replace("\\|", "|")) for m in map(ROW.match, section.splitlines()) if m]
    return found


def _tiny(root: Path) -> Path:
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 64), ("t10k", 32)):
        write_idx(root / "MNIST" / "raw" / f"{prefix}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        write_idx(root / "MNIST" / "raw" / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)
    return root


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("bad")
    gz = _tiny(tmp / "gz") / "MNIST" / "raw" / "train-images-idx3-ubyte.gz"
    gz.write_bytes(gz.read_bytes()[:200])
    idx = _tiny(tmp / "idx") / "MNIST" / "raw" / "train-images-idx3-ubyte.gz"
    idx.with_suffix("").write_bytes(gzip.decompress(idx.read_bytes())[:5000])
    (tmp / "afile").write_text("")
    shutil.copy(REPO / "results/runs/cpu/mnist/alg1_eps1_seed0.json", tmp / "result.json")
    (tmp / "e.json.ckpt.pt").write_bytes(b"")
    (tmp / "empty").mkdir()
    return dict(tmp=tmp, tiny=_tiny(tmp / "tiny"), gz=tmp / "gz", idx=tmp / "idx", afile=tmp / "afile",
                result=tmp / "result.json", empty=tmp / "empty", clone=script_sandbox(tmp / "clone"))


def _message(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("usage:", "  "))]
    return lines[0] if lines else ""


def test_the_table_has_every_kind_of_mistake():
    cmds = [cmd for cmd, _, _ in rows()]
    assert len(cmds) >= 25 and len(set(cmds)) == len(cmds)
    for prog, sub in (("dirdp", "train"), ("dirdp", "rstar"), ("workflow", "index"), ("workflow", "readme"),
                      ("workflow", "bench"), ("dirdp", "readme")):  # the last: a moved name, one line pointing on
        assert any(cmd.startswith(f"python -m {prog} {sub} ") for cmd in cmds), (prog, sub)
    assert any(cmd.startswith("PROFILE=") for cmd in cmds) and any(cmd.startswith("bash scripts/main.sh -") for cmd in cmds)


@pytest.mark.slow
@pytest.mark.parametrize("cmd, rc, says", rows(), ids=[r[0][:60] for r in rows()])
def test_each_bad_input_gets_what_the_docs_say(cmd, rc, says, places, capsys, monkeypatch):
    fill = {k: str(v) for k, v in places.items()}
    argv = [arg.format(**fill) for arg in cmd.split()]
    says = says.format(**fill)
    if "scripts/main.sh" in cmd:  # in a copy whose .venv stands in for the real one (its pip only records calls)
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PROFILE")}
        env.update(a.split("=", 1) for a in argv[:argv.index("bash")])
        before = len(pip_calls(places["clone"]))
        proc = subprocess.run(argv[argv.index("bash"):], cwd=places["clone"], capture_output=True, text=True,
                              env=dict(env, PYTHONPATH=str(REPO)))
        code, err = proc.returncode, proc.stderr
        assert len(err.splitlines()) == 1, err  # one line, no usage block
        if "PROFILE" in env:  # refused before the setup
            assert len(pip_calls(places["clone"])) == before
    elif argv[0] == "snakemake":
        env = dict(os.environ, DIRDP_DATA=fill["empty"])
        proc = subprocess.run([str(Path(sys.executable).with_name("snakemake")), *argv[1:]], capture_output=True,
                              text=True, cwd=REPO, env=env)
        code, err = proc.returncode, proc.stdout + proc.stderr
    else:  # in this process: python -m dirdp ... or python -m workflow ...
        from dirdp.__main__ import main
        from workflow.__main__ import main as workflow_main

        main = workflow_main if argv[2] == "workflow" else main
        monkeypatch.setenv("DIRDP_DATA", fill["empty"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                code = main(argv[3:])
            except SystemExit as exit_:  # argparse's own usage errors
                code = exit_.code
        err = capsys.readouterr().err
    assert "Traceback" not in err
    assert code == rc, err
    line = (_message(err) if argv[0] == "python" else
            next((x for x in err.splitlines() if says.rstrip("…") in x), err))
    if says.endswith("…"):
        assert line.startswith(says[:-1]) or says[:-1] in line, line
    else:
        assert line == says
