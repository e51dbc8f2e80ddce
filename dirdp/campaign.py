"""A campaign: a profile's training runs in priority order, K at a time, inside a wall-clock budget.

Two uses, one machinery:

- **The GPU campaign** (``scripts/gpu_campaign.sh`` = ``python -m dirdp campaign run --config config/gpu.yaml``):
  on one CUDA GPU, inside a budget (default 540 s), it runs the CUDA test lane (``pytest -m cuda``), the
  benchmark (:func:`dirdp.bench.campaign_bench`: per-step time of non-private, Algorithm 1 and DP-SGD for the
  full-width models, fp32 and bf16 + channels_last, with projections), then trains the queue K runs at a time
  (the models leave a large GPU mostly idle, so several processes side by side is the point), and packs what it
  made into a few files that ``python -m dirdp campaign unpack`` puts back into the repository.
- **The CPU evidence campaign** (``scripts/campaign.sh``): the same queue runner in the background with no
  budget, one thread per run; ``campaign status`` says where each run stands.

Each run is an ordinary ``python -m dirdp train ... --out results/runs/<profile>/<dataset>/<tag>.json``
process with the profile's own arguments (the DAG job's), so the DAG, the campaign and a person at a shell
all make, resume and skip the same files. A finished run (its JSON exists) is skipped; a run with a
checkpoint resumes; a run another process is training (its lock is held) is left alone. When the budget
runs out, the runner sends SIGTERM: each run finishes its step, writes its checkpoint and exits (75), and
the next call resumes it.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from dirdp.experiments import Profile, Run

REPO = Path(__file__).resolve().parents[1]
EXIT_INTERRUPTED = 75  # python -m dirdp train: stopped by SIGTERM after writing its checkpoint
MIB = 1 << 20

# smoke mode: the same queue machinery on CPU with tiny runs (the test suite runs it)
SMOKE_TRAINING = dict(device="cpu", width=0.0625, steps=4, q=0.05, train_subset=256, eval_every=2, threads=1,
                      bf16=False, channels_last=False)


@dataclass
class Job:
    """One run of the queue: where its result, checkpoint and log live, and how it went this call."""

    run: Run
    out: Path
    log: Path
    args: list[str]
    status: str = "queued"  # queued, done (before this call), running-elsewhere, finished, interrupted, failed
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


def load_profile(config: str | Path, *, smoke: bool = False, overrides: dict | None = None) -> Profile:
    """The profile of ``config`` (a profile YAML), with ``overrides`` of its ``training`` block; ``smoke``
    turns every run into a 4-step CPU run on a small training subset (:data:`SMOKE_TRAINING`)."""
    import yaml

    path = Path(config)
    if not path.exists():
        raise ValueError(f"no profile {path}: give a config/<profile>.yaml (e.g. config/gpu.yaml).")
    cfg = yaml.safe_load(path.read_text())
    training = dict(cfg.get("training") or {})
    if smoke:
        training.update(SMOKE_TRAINING)
    training.update(overrides or {})
    return Profile.from_config({**cfg, "training": training})


def plan(profile: Profile, *, results_root: str | Path = "results/runs", logs_root: str | Path = "results/logs/runs",
         max_runs: int | None = None, threads: int | None = None) -> list[Job]:
    """The profile's runs in campaign order (:meth:`Profile.campaign_queue`), each as a job with its
    ``python -m dirdp train`` arguments. ``max_runs`` keeps the first that many."""
    from dirdp.training import is_running

    jobs = []
    for run in profile.campaign_queue()[:max_runs]:
        out = Path(run.path(profile.name, str(results_root)))
        log = Path(logs_root) / profile.name / run.dataset / f"{run.tag}.log"
        t = threads or int(profile.training.get("threads") or 1)
        args = [*profile.train_args(run), "--threads", str(t), "--out", str(out)]
        job = Job(run, out, log, args)
        job.status = "done" if out.exists() else "running-elsewhere" if is_running(out) else "queued"
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
    """One line: where this run stands (finished with its accuracy, in progress at step s / T, queued)."""
    if job.out.exists():
        rec = json.loads(job.out.read_text())
        wall = rec.get("wall_time_s") or 0
        return (f"{job.name:42s} finished   test acc. {rec['test_accuracy']:6.2f}  "
                f"({rec['steps']} steps, {wall / 60:.0f} min, {rec['provenance']['git_commit'][:12]})")
    steps = int(job.args[job.args.index("--steps") + 1]) if "--steps" in job.args else None
    step = _ckpt_step(job.ckpt)
    from dirdp.training import is_running

    where = "running   " if is_running(job.out) else ("stopped   " if step is not None else "queued    ")
    at = f"checkpoint at step {step}" if step is not None else "no checkpoint"
    return f"{job.name:42s} {where} {at}" + (f" of {steps}" if steps and step is not None else "")


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
        acc = json.loads(job.out.read_text())["test_accuracy"]
        say(f"finished  {job.name}: test acc. {acc:.2f} in {job.wall_s:.0f} s")
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
    """Train the queued jobs, ``k`` at a time, until all are done or ``deadline`` (a ``time.monotonic()``
    value; None = none) passes; then SIGTERM the running ones (each checkpoints and exits) and, after
    ``grace_s``, SIGKILL what is left. SIGTERM or SIGINT to this process count as the deadline.
    ``sample()``, if given, is called about every 10 s while runs are going (GPU utilisation).
    ``hold()``, if given, is asked before each start: a reason (str) holds the start back until it is None."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    queue = [j for j in jobs if j.status == "queued"]
    running: list[Job] = []
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    last_sample = last_hold = -math.inf
    held = None
    try:
        while queue or running:
            out_of_time = stop["now"] or (deadline is not None and time.monotonic() >= deadline)
            if queue and len(running) < k and hold is not None and time.monotonic() - last_hold >= hold_every_s:
                last_hold = time.monotonic()
                reason = hold()
                if reason and reason != held:
                    say(f"holding the next start: {reason}")
                held = reason
            while queue and len(running) < k and not out_of_time and not held:
                job = queue.pop(0)
                if job.out.exists():  # finished meanwhile (another process)
                    job.status = "done"
                    continue
                _launch(job, env)
                running.append(job)
                say(f"started   {job.name} ({len(running)} running, {len(queue)} queued)")
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


def gpu_sample() -> dict | None:
    """GPU utilisation and memory in use now (nvidia-smi), or None where there is none."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,memory.used,memory.total",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10).stdout
        util, used, total = (float(v) for v in out.splitlines()[0].split(","))
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return None
    return dict(t=_now(), util_pct=util, mem_used_mib=used, mem_total_mib=total)


def choose_k(bench_rows: list[dict] | None, *, device: str, cpu_count: int | None = None, k_max: int = 8) -> tuple[int, str]:
    """How many runs to train side by side, and why. On CUDA: as many as memory allows (the benchmark's
    peak memory of a full-width Algorithm-1 step, twice over for safety, against 80% of the GPU), at most
    one per two CPU cores and ``k_max``. On CPU: one per core."""
    cpus = cpu_count or os.cpu_count() or 1
    if not device.startswith("cuda"):
        return max(1, min(k_max, cpus)), f"CPU: one run per core ({cpus} cores)"
    import torch

    total = torch.cuda.get_device_properties(0).total_memory / 2**30
    peaks = [r["peak_mem_gib"]["algorithm1"] for r in bench_rows or []
             if isinstance(r.get("peak_mem_gib"), dict) and r["peak_mem_gib"].get("algorithm1")]
    by_mem = int(0.8 * total / (2 * max(peaks))) if peaks else k_max
    k = max(1, min(k_max, cpus // 2, by_mem))
    return k, (f"min(k_max {k_max}, {cpus} CPU cores / 2, 80% of {total:.0f} GiB / (2 x peak "
               f"{max(peaks) if peaks else float('nan'):.2f} GiB) = {by_mem})")


# --------------------------------------------------------------------------------------------- packing
def pack(files: list[tuple[Path, str]], dest: str | Path, *, root: Path = REPO, part_mib: float = 15.5,
         max_parts: int = 4, name: str = "campaign.tar.gz") -> dict:
    """Pack ``files`` ((path, priority label) pairs, most important first) into one gzipped tar, split into at
    most ``max_parts`` files of at most ``part_mib`` MiB in ``dest`` (``<name>.00``, ``.01``, ...). A file that
    would not fit (sizes counted uncompressed, so the bound holds) is left out and listed. Paths are stored
    relative to ``root``, so :func:`unpack` puts them back where they were."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    budget = int(part_mib * MIB) * max_parts - 64 * 1024  # headroom for tar headers and gzip framing
    kept, left_out, used = [], [], 0
    for path, label in files:
        size = path.stat().st_size + 1024
        if used + size > budget:
            left_out.append(dict(path=str(path.resolve().relative_to(root)), label=label, bytes=size))
            continue
        used += size
        kept.append((path, label))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        manifest = json.dumps(dict(created_utc=_now(), files=[str(p.resolve().relative_to(root)) for p, _ in kept],
                                   left_out=left_out), indent=1).encode()
        info = tarfile.TarInfo("CAMPAIGN_MANIFEST.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
        for path, _ in kept:
            tar.add(path, arcname=str(path.resolve().relative_to(root)))
    data = buf.getvalue()
    part = int(part_mib * MIB)
    parts = []
    for i in range(0, max(len(data), 1), part):
        p = dest / f"{name}.{len(parts):02d}"
        p.write_bytes(data[i:i + part])
        parts.append(p)
    if len(parts) > max_parts:  # cannot happen with the uncompressed bound above; never pass it silently
        raise RuntimeError(f"pack needs {len(parts)} parts, more than {max_parts}")
    return dict(parts=[str(p) for p in parts], bytes=len(data), files=len(kept), left_out=left_out)


def unpack(src: str | Path, *, root: Path = REPO, name: str = "campaign.tar.gz") -> list[str]:
    """Put a pack made by :func:`pack` back into the repository at ``root``: only files under ``results/``
    are accepted. Returns the paths written."""
    src = Path(src)
    parts = sorted(src.glob(f"{name}.[0-9][0-9]"))
    if not parts:
        raise ValueError(f"no {name}.00, .01, ... in {src}: give the folder the campaign packed into.")
    data = b"".join(p.read_bytes() for p in parts)
    written = []
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        for m in members:
            if m.name == "CAMPAIGN_MANIFEST.json":
                continue
            target = (root / m.name).resolve()
            if not m.isfile() or (root.resolve() / "results") not in target.parents:
                raise ValueError(f"{parts[0]}: refusing {m.name!r} (a pack holds only files under results/)")
        for m in members:
            if m.name == "CAMPAIGN_MANIFEST.json":
                continue
            target = root / m.name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".unpack")
            tmp.write_bytes(tar.extractfile(m).read())
            os.replace(tmp, target)
            written.append(m.name)
    return written


def pack_list(jobs: list[Job], campaign_dir: Path, *, weights: bool = True) -> list[tuple[Path, str]]:
    """What a campaign brings back, most important first: its own records, the result JSONs, the
    checkpoints of unfinished runs (so the next call resumes them), the run logs, then the released
    models (``<stem>.model.pt``, the membership audit reads them) if room is left."""
    files = [(p, "campaign record") for p in sorted(campaign_dir.rglob("*")) if p.is_file()]
    files += [(j.out, "result") for j in jobs if j.status == "finished"]
    files += [(j.ckpt, "checkpoint") for j in jobs if j.ckpt.exists() and not j.out.exists()]
    if weights:
        files += [(m, "model weights") for j in jobs if j.status == "finished"
                  and (m := j.out.with_name(j.out.stem + ".model.pt")).exists()]
    return files


# ------------------------------------------------------------------------------------------- the driver
def _remaining(deadline: float | None) -> float:
    return float("inf") if deadline is None else deadline - time.monotonic()


def _step(name: str, cmd: list[str], log: Path, *, timeout: float, env: dict, say) -> dict:
    """Run one preparatory command (test lane, benchmark) with its output in ``log``; never raises."""
    say(f"--- {name}: {' '.join(cmd)} (at most {timeout:.0f} s)")
    t = time.monotonic()
    try:
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=max(timeout, 1))
        rc, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as err:
        rc, text = None, f"{err.stdout or ''}{err.stderr or ''}\n[stopped after {timeout:.0f} s]"
        text = text if isinstance(text, str) else text.decode(errors="replace")
    log.write_text(text)
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    say("\n".join(lines[-25:]))
    return dict(returncode=rc, seconds=round(time.monotonic() - t, 1), last_line=lines[-1] if lines else "")


def run_campaign(config: str | Path = "config/gpu.yaml", *, budget_s: float | None = 540, k: int | None = None,
                 pack_to: str | Path | None = None, smoke: bool = False, workdir: str | Path | None = None,
                 max_runs: int | None = None, tests: bool = True, bench: bool = True, bench_reps: int = 10,
                 require_clean: bool = False, say=print) -> dict:
    """The whole campaign in one call (see the module docstring). ``workdir`` is the folder that holds
    ``results/`` (the repository by default; a temporary folder for ``smoke``). Returns the summary that
    is also written to ``results/campaign/<profile>/<UTC time>/summary.json``."""
    import tempfile

    t0 = time.monotonic()
    deadline = t0 + budget_s if budget_s else None
    profile = load_profile(config, smoke=smoke)
    device = str(profile.training.get("device", "cpu"))
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"{config} trains on {device}, but torch sees no CUDA device. "
                             "On a machine without one, --smoke runs the same machinery on CPU with 4-step runs.")
    work = Path(workdir) if workdir else (Path(tempfile.mkdtemp(prefix="dirdp-smoke-")) if smoke else REPO)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    cdir = work / "results" / "campaign" / profile.name / stamp
    cdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    summary: dict = dict(config=str(config), profile=profile.name, smoke=smoke, device=device, budget_s=budget_s,
                         started_utc=_now(), workdir=str(work))
    from dirdp.provenance import device_name, git_commit

    summary.update(device_name=device_name(), git_commit=git_commit())
    say(f"dirdp campaign: profile '{profile.name}' on {summary['device_name']}, budget "
        f"{budget_s or 'none'} s, results under {work / 'results'}")

    if tests:
        summary["tests"] = _step("CUDA test lane", [sys.executable, "-m", "pytest", "-q", "-m", "cuda",
                                                    "-p", "no:cacheprovider", "tests/test_cuda.py"],
                                 cdir / "tests.log", timeout=min(150, _remaining(deadline) - 120), env=env, say=say)
    rows = None
    if bench:
        bench_cmd = [sys.executable, "-m", "dirdp", "bench", "--campaign", "--device", device,
                     "--reps", str(1 if smoke else bench_reps), "--json-out", str(cdir / "bench.json")]
        if smoke:
            bench_cmd += ["--width", "0.0625", "--models", "inception", "--precisions", "fp32"]
        summary["bench"] = _step("benchmark", bench_cmd, cdir / "bench.log",
                                 timeout=min(150, _remaining(deadline) - 90), env=env, say=say)
        if (cdir / "bench.json").exists():
            rows = json.loads((cdir / "bench.json").read_text()).get("rows")
    if k is None:
        k, why = (2, "smoke: 2 at once") if smoke else choose_k(rows, device=device)
    else:
        why = "given (--k)"
    threads = max(1, (os.cpu_count() or 2) // k) if device.startswith("cuda") else None
    jobs = plan(profile, results_root=work / "results" / "runs", logs_root=work / "results" / "logs" / "runs",
                max_runs=max_runs, threads=threads)
    summary.update(k=k, k_reason=why)
    todo = [j for j in jobs if j.status == "queued"]
    say(f"--- training: {len(todo)} of {len(jobs)} runs to do, {k} at a time ({why})")
    samples: list[dict] = []
    t_train = time.monotonic()
    reserve = 30 if device.startswith("cuda") else 20  # shutdown (checkpoints) and packing
    run_queue(jobs, k=k, deadline=None if deadline is None else deadline - reserve, env=env,
              grace_s=15 if device.startswith("cuda") else 60, say=say, hold=_dirty_code if require_clean else None,
              sample=(lambda: samples.append(s) if (s := gpu_sample()) else None) if device.startswith("cuda") else None)
    summary["train_s"] = round(time.monotonic() - t_train, 1)
    summary["gpu_samples"] = samples
    summary["runs"] = [_record(j) for j in jobs if j.status not in ("queued", "done")]
    summary["not_reached"] = [j.name for j in jobs if j.status == "queued"]
    steps = sum(r["steps_this_call"] or 0 for r in summary["runs"])
    summary["steps_per_s_total"] = round(steps / summary["train_s"], 2) if summary["train_s"] else None
    logs = cdir / "logs"
    for j in jobs:
        if j.log.exists() and j.status not in ("queued", "done"):
            (logs / j.run.dataset).mkdir(parents=True, exist_ok=True)
            shutil.copy(j.log, logs / j.run.dataset / j.log.name)
    summary["wall_s"] = round(time.monotonic() - t0, 1)
    (cdir / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    say(report(summary))
    if pack_to:
        packed = pack(pack_list(jobs, cdir), pack_to, root=work)
        say(f"packed {packed['files']} files into {len(packed['parts'])} part(s), {packed['bytes'] / MIB:.1f} MiB, in "
            f"{pack_to}" + (f"; left out (no room): {[x['path'] for x in packed['left_out']]}" if packed["left_out"] else ""))
        summary["pack"] = packed
    summary["campaign_dir"] = str(cdir)
    return summary


def _dirty_code() -> str | None:
    """Why a run must not start now: the code differs from its commit (its provenance would say "+dirty")."""
    from dirdp.provenance import git_commit

    if git_commit(REPO).endswith("+dirty"):
        return "uncommitted code changes (a run started now would record '+dirty'); commit them and it starts"
    return None


def _record(job: Job) -> dict:
    """What one run did in this call."""
    rec = json.loads(job.out.read_text()) if job.out.exists() else None
    steps_total = rec["steps"] if rec else None
    at = rec["steps"] if rec else _ckpt_step(job.ckpt)
    started_at = None
    if job.log.exists():  # "resumed from step N" in this call's part of the log
        part = job.log.read_text(errors="replace").rsplit("\n=== ", 1)[-1]
        for line in part.splitlines():
            if line.startswith("resumed from step "):
                started_at = int(line.split()[3])
    done_now = None if at is None else at - (started_at or 0)
    return dict(run=job.name, out=str(job.out), status=job.status, returncode=job.returncode, wall_s=job.wall_s,
                step=at, steps=steps_total, resumed_from=started_at, steps_this_call=done_now,
                steps_per_s=round(done_now / job.wall_s, 2) if done_now and job.wall_s else None,
                test_accuracy=rec["test_accuracy"] if rec else None)


def report(summary: dict) -> str:
    """The campaign's outcome as text: one line per run it touched, then the totals."""
    lines = [f"\n{'run':42s} {'status':12s} {'step':>11s} {'wall s':>7s} {'steps/s':>8s} {'test acc.':>9s}"]
    for r in summary["runs"]:
        step = f"{r['step']}" if r["step"] is not None else "-"
        lines.append(f"{r['run']:42s} {r['status']:12s} {step:>11s} {r['wall_s'] or 0:7.0f} "
                     f"{r['steps_per_s'] or 0:8.2f} {'' if r['test_accuracy'] is None else format(r['test_accuracy'], '.2f'):>9s}")
    util = [s["util_pct"] for s in summary.get("gpu_samples") or []]
    lines.append(f"K = {summary['k']} ({summary['k_reason']}); training {summary['train_s']:.0f} s, "
                 f"{summary['steps_per_s_total']} steps/s over all runs"
                 + (f"; GPU utilisation mean {sum(util) / len(util):.0f}% over {len(util)} samples" if util else ""))
    if summary["not_reached"]:
        lines.append(f"not reached in this call ({len(summary['not_reached'])}): the next call starts them")
    return "\n".join(lines)


def status(config: str | Path, *, workdir: str | Path | None = None) -> str:
    """Where every run of the profile's campaign stands, in queue order."""
    profile = load_profile(config)
    work = Path(workdir) if workdir else REPO
    jobs = plan(profile, results_root=work / "results" / "runs", logs_root=work / "results" / "logs" / "runs")
    done = sum(j.out.exists() for j in jobs)
    return "\n".join([f"campaign of '{profile.name}' ({config}): {done} of {len(jobs)} runs finished"]
                     + [describe(j) for j in jobs])
