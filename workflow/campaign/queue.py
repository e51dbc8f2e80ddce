"""The queue runner: a profile's runs as jobs (``python -m dirdp train`` processes), K at a time, with a deadline.

:func:`plan` turns a profile's campaign queue into jobs (:class:`Job`), :func:`run_queue` trains them K at a time
(SIGTERM at the deadline: each run checkpoints and exits), :func:`describe` says where one stands.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from workflow.experiments import Profile, Run

REPO = Path(__file__).resolve().parents[2]
EXIT_INTERRUPTED = 75  # python -m dirdp train: stopped by SIGTERM after writing its checkpoint


@dataclass
class Job:
    """One run of the queue: where its result, checkpoint and log live, and how it went this campaign run."""

    run: Run
    out: Path
    log: Path
    args: list[str]
    status: str = "queued"  # queued, done (before this campaign run), running-elsewhere, finished, interrupted, failed
    redo_dirty: bool = False  # the profile's ``campaign: redo_dirty``: a result of uncommitted code is trained again
    replaces: dict | None = None  # the +dirty result this job trains again (its commit, accuracy, weights' hash)
    slots: int = 1  # how many of the K run slots it takes: its torch threads on CPU (training: threads_by_width)
    returncode: int | None = None
    wall_s: float | None = None
    started: float | None = None
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"{self.run.dataset}/{self.out.stem}"

    @property
    def ckpt(self) -> Path:
        return self.out.with_name(self.out.name + ".ckpt.pt")

    def done(self) -> bool:
        """Its result is there, and (with ``redo_dirty``) was made by committed code."""
        return self.out.exists() and not (self.redo_dirty and made_dirty(self.out) is not None)


def made_dirty(out: Path) -> dict | None:
    """What a result JSON says of the code that made it when that code was uncommitted (its provenance commit ends
    in "+dirty"): the commit, test accuracy and weights' hash; None for committed code or a file it cannot read."""
    from dirdp.provenance import dirty

    try:
        rec = json.loads(Path(out).read_text())
        made = dirty(rec["provenance"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None if made is None else dict(git_commit=made["git_commit"], test_accuracy=rec.get("test_accuracy"),
                                          params_sha256=rec.get("params_sha256"))


def plan(profile: Profile, *, results_root: str | Path = "results/runs", logs_root: str | Path = "results/logs/runs",
         max_runs: int | None = None, threads: int | None = None) -> list[Job]:
    """The profile's runs in campaign order (:meth:`Profile.campaign_queue`), each as a job with its
    ``python -m dirdp train`` arguments. ``max_runs`` keeps the first that many. With ``campaign: redo_dirty: true``
    a run whose result was made by uncommitted code (provenance "+dirty") is queued again: it trains at its own path
    (the old result stays until the new one replaces it, and in git history after). ``threads`` (the GPU
    campaign's CPU share per run) overrides the profile's :meth:`Profile.threads`; without it a job takes as many
    of the K slots as it has threads."""
    from dirdp.runfile import is_running

    redo = bool((profile.config.get("campaign") or {}).get("redo_dirty"))
    jobs = []
    for run in profile.campaign_queue()[:max_runs]:
        out = Path(run.path(profile.name, str(results_root)))
        log = Path(logs_root) / profile.name / run.dataset / f"{run.tag}.log"
        t = threads or profile.threads(run)
        args = [*profile.train_args(run), "--threads", str(t), "--out", str(out)]
        job = Job(run, out, log, args, redo_dirty=redo, slots=1 if threads else t)
        job.status = "done" if job.done() else "running-elsewhere" if is_running(out) else "queued"
        if redo and out.exists() and job.status != "done":
            job.replaces = made_dirty(out)
            job.args.append("--force")  # train although --out exists (it resumes from its checkpoint as ever)
        jobs.append(job)
    return jobs


def _ckpt_step(path: Path) -> int | None:
    """The step a checkpoint is at (None if there is none or it cannot be read)."""
    if not path.exists():
        return None
    try:
        import torch

        return int(torch.load(path, map_location="cpu", weights_only=False)["state"]["step"])
    except Exception:  # noqa: BLE001 - a half-written or foreign file: say "unreadable", never crash a status
        return None


def describe(job: Job) -> str:
    """One line: where this run stands (finished with its accuracy, in progress at step s / T, queued); for a
    finished result of uncommitted code that the campaign trains again (``redo_dirty``), both."""
    if "--steps" in job.args:
        steps = int(job.args[job.args.index("--steps") + 1])
    else:  # the paper's T of the data set (what python -m dirdp train runs without --steps)
        from dirdp.presets import PRESETS

        steps = PRESETS[job.run.dataset].steps if job.run.dataset in PRESETS else None
    step = _ckpt_step(job.ckpt)
    from dirdp.runfile import is_running

    where = "running" if is_running(job.out) else ("stopped" if step is not None else "queued")
    at = f"checkpoint at step {step}" if step is not None else "no checkpoint"
    at += f" of {steps}" if steps and step is not None else ""
    if job.out.exists():
        rec = json.loads(job.out.read_text())
        wall = rec.get("wall_time_s") or 0
        line = (f"{job.name:42s} finished   test acc. {rec['test_accuracy']:6.2f}  "
                f"({rec['steps']} steps, {wall / 60:.0f} min, {rec['provenance']['git_commit'][:12]})")
        if job.done():
            return line
        return line + f"; made by uncommitted code, trained again: {where}, {at}"
    return f"{job.name:42s} {where:10s} {at}" + (f" ({job.slots} threads)" if job.slots > 1 else "")


def _launch(job: Job, env: dict) -> None:
    job.log.parent.mkdir(parents=True, exist_ok=True)
    log = open(job.log, "a")
    log.write(f"\n=== {_now()} python -m dirdp train {' '.join(job.args)}\n")
    log.flush()
    job.proc = subprocess.Popen([sys.executable, "-m", "dirdp", "train", *job.args], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, env=env, cwd=REPO, start_new_session=True)
    log.close()
    job.started = time.monotonic()
    job.status = "running"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _finish(job: Job, rc: int, say) -> None:
    job.returncode = rc
    job.wall_s = round(time.monotonic() - job.started, 1)
    if rc == 0 and job.out.exists():
        job.status = "finished"
        rec = json.loads(job.out.read_text())
        say(f"finished  {job.name}: test acc. {rec['test_accuracy']:.2f} in {job.wall_s:.0f} s")
        if job.replaces:
            old = job.replaces
            new = rec.get("params_sha256")
            same = ("no weights' hash to compare" if old["params_sha256"] is None or new is None else
                    "the same weights (params_sha256)" if old["params_sha256"] == new else "other weights (params_sha256)")
            say(f"          it replaces the result of uncommitted code {old['git_commit'][:12]}+dirty (test acc. "
                f"{old['test_accuracy']:.2f}): {same}")
    elif rc in (EXIT_INTERRUPTED, -signal.SIGTERM, -signal.SIGKILL):
        job.status = "interrupted"
        say(f"stopped   {job.name} after {job.wall_s:.0f} s: checkpoint at step {_ckpt_step(job.ckpt)}")
    else:
        job.status = "failed"
        tail = job.log.read_text(errors="replace")[-600:] if job.log.exists() else ""
        say(f"FAILED    {job.name} (exit {rc}); end of {job.log}:\n{tail}")


def run_queue(jobs: list[Job], *, k: int, deadline: float | None = None, env: dict | None = None,
              grace_s: float = 60.0, poll_s: float = 0.5, say=print, sample=None, hold=None,
              hold_every_s: float = 10.0) -> list[Job]:
    """Train the queued jobs in order, ``k`` slots at a time (a job takes ``job.slots`` of them, at most ``k``: with
    K = 2 a two-thread run runs alone; the next job waits for room, none jumps the queue), until all are done or
    ``deadline`` (a ``time.monotonic()`` value; None = none) passes; then SIGTERM the running ones (each checkpoints
    and exits) and, after ``grace_s``, SIGKILL what is left. SIGTERM or SIGINT to this process count as the deadline.
    ``sample()``, if given, is called about every 10 s while runs are going (GPU utilisation).
    ``hold()``, if given, is asked before each start: a reason (str) holds the start back until it is None."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    queue = [j for j in jobs if j.status == "queued"]
    running: list[Job] = []
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    def room() -> bool:  # the next job in the queue fits beside the running ones
        return bool(queue) and sum(min(j.slots, k) for j in running) + min(queue[0].slots, k) <= k

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    last_sample = last_hold = -math.inf
    held = None
    try:
        while queue or running:
            out_of_time = stop["now"] or (deadline is not None and time.monotonic() >= deadline)
            if room() and hold is not None and time.monotonic() - last_hold >= hold_every_s:
                last_hold = time.monotonic()
                reason = hold()
                if reason and reason != held:
                    say(f"holding the next start: {reason}")
                held = reason
            while room() and not out_of_time and not held:
                job = queue.pop(0)
                if job.done():  # finished meanwhile (another process)
                    job.status = "done"
                    continue
                _launch(job, env)
                running.append(job)
                threads = f", {job.slots} threads" if job.slots > 1 else ""
                say(f"started   {job.name} ({len(running)} running, {len(queue)} queued{threads})")
            for job in list(running):
                rc = job.proc.poll()
                if rc is not None:
                    running.remove(job)
                    _finish(job, rc, say)
            if out_of_time and running:
                say(f"budget reached: stopping {len(running)} run(s); each writes its checkpoint")
                for job in running:
                    job.proc.send_signal(signal.SIGTERM)
                end = time.monotonic() + grace_s
                while running and time.monotonic() < end:
                    for job in list(running):
                        if (rc := job.proc.poll()) is not None:
                            running.remove(job)
                            _finish(job, rc, say)
                    time.sleep(0.2)
                for job in running:
                    job.proc.kill()
                    _finish(job, job.proc.wait(), say)
                running = []
            if out_of_time:
                break
            if sample is not None and time.monotonic() - last_sample >= 10:
                last_sample = time.monotonic()
                sample()
            time.sleep(poll_s)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return jobs
