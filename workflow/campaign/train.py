"""The campaign's training step: the plan's runs through Snakemake, the one scheduler, until they are done or the
deadline passes.

:func:`snakemake_command` is ``snakemake --keep-going`` with the runs as its targets: Snakemake starts each train job
in the profile's priority order (the priority of rules/train.smk), K at a time (``--cores K`` on a CPU, where each job
takes its threads; ``--resources gpu=K`` on a GPU), and a run with a checkpoint resumes from it. :func:`run_until`
runs it in a process group of its own; at the deadline, or when the campaign itself is told to stop (SIGTERM,
SIGINT), every process of that group gets SIGTERM: Snakemake starts no more jobs, and each run finishes its step,
writes its checkpoint and exits (75), so that the next campaign resumes it.

Where Snakemake is not installed (a GPU node without network, whose bundle cannot carry it within its size cap:
docs/scale.md), :func:`plain_command` runs the same train commands, in the same order, through ``xargs -P K``.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from workflow.campaign.plan import REPO, Job


def has_snakemake() -> bool:
    """Whether Snakemake can run here (this interpreter imports it)."""
    try:
        return importlib.util.find_spec("snakemake") is not None
    except (ImportError, ValueError):
        return False


def snakemake_command(profile_file: str | Path, jobs: list[Job], *, k: int, gpu: bool, work: Path,
                      datasets: list[str] | None = None) -> list[str]:
    """``snakemake --keep-going`` of the profile ``profile_file`` with ``jobs``' results as its targets, K at a time,
    in ``work`` (the folder that holds results/). ``datasets``: the profile restricted to the data sets on disk
    here. No lock (``--nolock``): the runs lock themselves, and a person may run the DAG with ``--config
    train=false`` in the same checkout meanwhile. The greedy scheduler takes the ready jobs in priority order, the
    queue's: the default (ILP) maximises the sum of the priorities it starts, so two one-thread runs far down the
    queue would start before the two-thread run at its head."""
    targets = [str(j.out.resolve().relative_to(work.resolve())) for j in jobs]  # first: options take several values
    cmd = [sys.executable, "-m", "snakemake", *targets, "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--configfile", str(Path(profile_file).resolve()), "--keep-going", "--rerun-incomplete", "--nolock",
           "--scheduler", "greedy", "--cores", str(os.cpu_count() or 1) if gpu else str(k)]
    if gpu:
        cmd += ["--resources", f"gpu={k}"]
    if datasets:
        cmd += ["--config", f"datasets=[{','.join(datasets)}]"]
    return cmd


def plain_command(jobs: list[Job], *, k: int, jobs_file: Path) -> list[str]:
    """Without Snakemake: ``xargs -P K`` (its standard input ``jobs_file``, which this writes: one train command a
    line in the plan's order, each the DAG's train job's, ``python -m dirdp train ... --out X > LOG 2>&1``)."""
    lines = []
    for j in jobs:
        j.log.parent.mkdir(parents=True, exist_ok=True)
        lines.append(f"{shlex.join([sys.executable, '-m', 'dirdp', 'train', *j.args])} > {shlex.quote(str(j.log))} 2>&1")
    jobs_file.write_text("\n".join(lines) + "\n")
    return ["xargs", "-d", "\n", "-P", str(k), "-I", "{}", "sh", "-c", "{}"]


def run_until(cmd: list[str], *, deadline: float | None, env: dict, cwd: Path, log: Path, say, grace_s: float = 60,
              stdin: Path | None = None, tick=None) -> int | None:
    """Run ``cmd`` (output in ``log``, standard input ``stdin``) in a process group of its own until it exits or
    ``deadline`` (a ``time.monotonic()`` value) passes; SIGTERM or SIGINT to this process count as the deadline. Then
    SIGTERM to the whole group, and after ``grace_s`` SIGKILL to what is left of it. ``tick()``, if given, is called
    about every 10 s meanwhile (GPU utilisation). Returns ``cmd``'s exit status (None when it was stopped)."""
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with open(log, "ab") as out, open(stdin or os.devnull, "rb") as inp:
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=inp,
                                    start_new_session=True)
        _prioritise(proc.pid, env.get("CAMPAIGN_PRIORITY"), say)
        last_tick = -float("inf")
        while not stop["now"] and (deadline is None or time.monotonic() < deadline):
            if proc.poll() is not None and not _alive(proc.pid):  # it ended, and every process it started too
                return proc.returncode
            if tick is not None and time.monotonic() - last_tick >= 10:
                last_tick = time.monotonic()
                tick()
            time.sleep(0.5)
        say("budget reached or told to stop: every run writes its checkpoint and stops")
        _signal(proc.pid, signal.SIGTERM)
        end = time.monotonic() + grace_s
        while (proc.poll() is None or _alive(proc.pid)) and time.monotonic() < end:
            time.sleep(0.2)
        if proc.poll() is None or _alive(proc.pid):
            _signal(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _prioritise(pid: int, nice: str | None, say) -> None:
    """Give the session of ``pid`` (its runs) the Linux autogroup nice value ``nice`` (-20 to 19; None: leave it):
    nice alone does not reach across sessions, so a test run in another terminal would otherwise take as large a share
    of the cores as every run together. Where the kernel refuses (no autogroups, no permission), it says so once."""
    if nice:
        try:
            Path(f"/proc/{pid}/autogroup").write_text(nice)
        except OSError as err:
            say(f"CAMPAIGN_PRIORITY={nice}: the runs keep the default priority ({err.strerror})")


def _signal(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except ProcessLookupError:
        pass


def _alive(group: int) -> bool:
    """Whether a process of the group ``group`` is still running."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
