"""A campaign's plan: a profile's runs in its priority order, each a :class:`Job` that says where its result,
checkpoint and log are and where it stands (:func:`describe`, :func:`status`).

The order is the profile's ``campaign: queue`` (:meth:`workflow.experiments.Profile.campaign_queue`), the same order
that gives each train job of the DAG its Snakemake priority (rules/train.smk): a run is declared once, in the profile's
grids, and the queue only orders them. Each job's command is the DAG's train job's (``python -m dirdp train`` with the
profile's arguments), so the DAG, the campaign and a person at a shell make, resume and skip the same files.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass
from pathlib import Path

from dirdp.runfile import is_running
from workflow.campaign.parked import step_of
from workflow.experiments import Profile, Run

REPO = Path(__file__).resolve().parents[2]

# smoke mode: the same machinery on CPU with 4-step runs (the test suite runs it), in a profile of its own
SMOKE_TRAINING = dict(device="cpu", width=0.0625, steps=4, q=0.05, train_subset=256, eval_every=2, threads=1,
                      precision="fp32")


@dataclass
class Job:
    """One run of the plan: where its result, checkpoint and log live, its command, and where it stands."""

    run: Run
    out: Path
    log: Path
    args: list[str]  # python -m dirdp train's arguments: the DAG's train job's (rules/train.smk), --out included
    threads: int = 1  # its torch threads: the profile's for its width (training: threads_by_width), its DAG job's
    status: str = "queued"  # queued, done (before this campaign), running-elsewhere; after it: finished, stopped, ...
    step_before: int | None = None  # its checkpoint's step when this campaign started

    @property
    def name(self) -> str:
        return f"{self.run.dataset}/{self.out.stem}"

    @property
    def ckpt(self) -> Path:
        return self.out.with_name(self.out.name + ".ckpt.pt")

    def done(self) -> bool:
        """Its result is there."""
        return self.out.exists()


def now() -> str:
    """The time now, UTC, as the campaign's records write it."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def profile_config(config: str | Path, *, smoke: bool = False) -> dict:
    """The profile of ``config`` as the Snakefile reads it (a profile YAML with what it ``extends:``, checked against
    config/schema.yaml); ``smoke`` turns every run into a 4-step CPU run on a small training subset
    (:data:`SMOKE_TRAINING`) of the profile ``<name>-smoke``, so that its runs never sit at a real run's path."""
    from workflow import profile_schema

    path = Path(config)
    if not path.exists():
        raise ValueError(f"no profile {path}: give a config/<profile>.yaml (e.g. config/gpu.yaml).")
    cfg = profile_schema.load(path)
    if smoke:
        cfg = {**cfg, "profile": f"{cfg['profile']}-smoke", "training": {**(cfg.get("training") or {}),
                                                                          **SMOKE_TRAINING}}
    return cfg


def load_profile(config: str | Path, *, smoke: bool = False) -> Profile:
    """:func:`profile_config` as a :class:`~workflow.experiments.Profile`."""
    return Profile.from_config(profile_config(config, smoke=smoke))


def plan(profile: Profile, *, results_root: str | Path = "results/runs", logs_root: str | Path = "results/logs/runs",
         max_runs: int | None = None) -> list[Job]:
    """The profile's runs in its priority order (:meth:`Profile.campaign_queue`), each as a job with the DAG's
    train command and log; ``max_runs`` keeps the first that many."""
    jobs = []
    for run in profile.campaign_queue()[:max_runs]:
        out = Path(run.path(profile.name, str(results_root)))
        log = Path(logs_root) / profile.name / run.dataset / f"{run.tag}.log"
        threads = profile.threads(run)
        args = [*profile.train_args(run), "--threads", str(threads), "--out", str(out)]
        job = Job(run, out, log, args, threads=threads, step_before=checkpoint_step(out))
        job.status = "done" if job.done() else "running-elsewhere" if is_running(out) else "queued"
        jobs.append(job)
    return jobs


def checkpoint_step(out: Path) -> int | None:
    """The step the checkpoint of result ``out`` is at (None if there is none or it cannot be read)."""
    path = Path(out).with_name(Path(out).name + ".ckpt.pt")
    return step_of(path) if path.exists() else None


# tqdm writes the rate as "1.37s/step" below one step a second and as "1.32step/s" above it
_TQDM = re.compile(r"(\d+)/(\d+) \[[\d:]+<([\d:]+), +([\d.]+)(s/step|step/s)")


def pace(log: Path) -> str | None:
    """What a run's log (its progress bar, one line every 30 s) says of its pace: "1.37 s/step, 1:03:40 to go"
    (tqdm's smoothed rate and estimate, which include the evaluations and slow down with other work on the
    machine), or None when the log has no such line yet."""
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4096))
            tail = f.read().decode(errors="replace")
    except OSError:
        return None
    found = _TQDM.findall(tail)
    if not found:
        return None
    _done, _total, left, rate, unit = found[-1]
    s_per_step = float(rate) if unit == "s/step" else 1 / float(rate)
    return f"{s_per_step:.2f} s/step, {left} to go"


def describe(job: Job, parked: dict | None = None) -> str:
    """One line: where this run stands (finished with its accuracy, in progress at step s / T, queued, or with a
    checkpoint parked in git history: ``parked``, its entry of :mod:`workflow.campaign.parked`'s ledger)."""
    if job.out.exists():
        rec = json.loads(job.out.read_text())
        wall = rec.get("wall_time_s") or 0
        return (f"{job.name:42s} finished   test acc. {rec['test_accuracy']:6.2f}  "
                f"({rec['steps']} steps, {wall / 60:.0f} min, {rec['provenance']['git_commit'][:12]})")
    if "--steps" in job.args:
        steps = int(job.args[job.args.index("--steps") + 1])
    else:  # the paper's T of the data set (what python -m dirdp train runs without --steps)
        from dirdp.presets import PRESETS

        steps = PRESETS[job.run.dataset].steps if job.run.dataset in PRESETS else None
    step = checkpoint_step(job.out)
    where = "running" if is_running(job.out) else ("stopped" if step is not None else "queued")
    at = f"checkpoint at step {step}" if step is not None else "no checkpoint"
    at += f" of {steps}" if steps and step is not None else ""
    if where == "running" and (now_at := pace(job.log)):
        at += f" ({now_at}, its log)"
    if step is None and parked:
        where, at = "parked", f"checkpoint at step {parked['step']} of {steps} in git ({parked['commit'][:12]}: start restores it)"
    return f"{job.name:42s} {where:10s} {at}" + (f" ({job.threads} threads)" if job.threads > 1 else "")


def status(config: str | Path, *, workdir: str | Path | None = None) -> str:
    """Where every run of the profile's campaign stands, in its priority order."""
    from workflow.campaign import parked

    profile = load_profile(config)
    work = Path(workdir) if workdir else REPO
    jobs = plan(profile, results_root=work / "results" / "runs", logs_root=work / "results" / "logs" / "runs")
    ledger = parked.read(work, profile.name)
    done = sum(j.done() for j in jobs)
    return "\n".join([f"campaign of '{profile.name}' ({config}): {done} of {len(jobs)} runs finished"]
                     + [describe(j, ledger.get(str(j.out.relative_to(work)))) for j in jobs])
