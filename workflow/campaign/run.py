"""The campaign driver (:func:`run_campaign`): on a GPU, the CUDA test lane and the benchmark first, K from the
benchmark (:func:`workflow.campaign.fit.choose_k`) and the plan fitted to the budget; then the training step
(:mod:`workflow.campaign.train`: Snakemake with the plan's runs as targets, until the budget); then its record
(``results/campaign/<profile>/<UTC time>/``: the summary, the runs' logs gzipped, the benchmark) and the pack."""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from dirdp import methods
from workflow.campaign.fit import choose_k, fit_runs
from workflow.campaign.packing import MIB, pack, pack_list
from workflow.campaign.plan import REPO, Job, checkpoint_step, now, plan, profile_config
from workflow.campaign.summary import record, report
from workflow.campaign.train import has_snakemake, plain_command, run_until, snakemake_command
from workflow.experiments import OBJECTS, Profile
from workflow.missing_data import present_data


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
    return dict(t=now(), util_pct=util, mem_used_mib=used, mem_total_mib=total)


def _pytest_missing() -> str | None:
    """Why the CUDA test lane cannot run as ``pytest`` here, or None if it can."""
    import importlib.util

    try:
        if importlib.util.find_spec("pytest") is not None:
            return None
    except (ImportError, ValueError):
        pass
    return ("pytest is not importable here: the CUDA test lane did not run (scripts/gpu_prepare.sh carries its "
            "wheels in .gpu/wheels; scripts/gpu_campaign.sh installs them)")


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


def dirty_code() -> str | None:
    """Why no run may start now: the code differs from its commit (its results would record "+dirty")."""
    from dirdp.provenance import git_commit

    if git_commit(REPO).endswith("+dirty"):
        return "uncommitted code changes (a run started now would record '+dirty'); commit them first"
    return None


def run_campaign(config: str | Path = "config/gpu.yaml", *, budget_s: float | None = 540, k: int | None = None,
                 pack_to: str | Path | None = None, smoke: bool = False, workdir: str | Path | None = None,
                 max_runs: int | None = None, tests: bool = True, bench: bool = True, bench_reps: int = 10,
                 require_clean: bool = False, fit: bool | None = None, pack_part_mib: float = 15.5,
                 pack_parts: int = 4, say=print) -> dict:
    """The whole campaign in one call (see the package docstring). ``workdir`` is the folder that holds
    ``results/`` (the repository by default; a temporary folder for ``smoke``). Returns the summary that
    is also written to ``results/campaign/<profile>/<UTC time>/summary.json``.

    ``fit`` (default: with a budget and no ``k``): start only the runs that can finish in the budget
    (:func:`~workflow.campaign.fit.fit_runs`, from the benchmark's steps/s). Runs whose data set is not under the data
    root (a bundle for a GPU node without network holds only the data set(s) it trains) are not started.
    ``require_clean``: refuse to start while the code differs from its commit. Checkpoints are packed only while the
    next bundle can still take them within the size cap: what the bundle this tree came in weighed and the cap it was
    prepared under (``.gpu/TRAVEL.json``, by ``scripts/gpu_prepare.sh``: :func:`workflow.campaign.travel.measured`).
    The pack: at most ``pack_parts`` files of ``pack_part_mib``."""
    import tempfile

    from workflow.campaign.travel import measured

    t0 = time.monotonic()
    deadline = t0 + budget_s if budget_s else None
    travel_bytes, size_cap = measured(REPO)  # scripts/gpu_prepare.sh's measurement of the bundle, if any
    cfg = profile_config(config, smoke=smoke)
    profile = Profile.from_config(cfg)
    device = str(profile.training.get("device", "cpu"))
    gpu = device.startswith("cuda")
    if gpu:
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"{config} trains on {device}, but torch sees no CUDA device. "
                             "On a machine without one, --smoke runs the same machinery on CPU with 4-step runs.")
    if require_clean and (why := dirty_code()):
        raise ValueError(f"--require-clean: {why}")
    work = Path(workdir) if workdir else (Path(tempfile.mkdtemp(prefix="dirdp-smoke-")) if smoke else REPO)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    cdir = work / "results" / "campaign" / profile.name / stamp
    cdir.mkdir(parents=True, exist_ok=True)
    profile_file = config
    if smoke:  # the profile <name>-smoke, as Snakemake reads a profile: one file, checked against the schema
        profile_file = cdir / "profile.yaml"
        profile_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    summary: dict = dict(config=str(config), profile=profile.name, smoke=smoke, device=device, budget_s=budget_s,
                         started_utc=now(), workdir=str(work))
    from dirdp.provenance import device_name, git_commit

    summary.update(device_name=device_name(), git_commit=git_commit())
    say(f"dirdp campaign: profile '{profile.name}' on {summary['device_name']}, "
        f"{f'budget {budget_s} s' if budget_s else 'no budget'}, results under {work / 'results'}")

    fit = bool(budget_s) and k is None if fit is None else fit
    step_cap = min(150.0, max(90.0, 0.2 * budget_s)) if budget_s else 150.0  # the test lane and the benchmark, each
    if tests:
        missing = _pytest_missing()
        if missing:
            say(f"--- CUDA test lane: not run: {missing}")
            summary["tests"] = dict(ran=False, runner=None, returncode=None, seconds=0.0, last_line=missing)
        else:
            summary["tests"] = _step("CUDA test lane", [sys.executable, "-m", "pytest", "-q", "-m", "cuda",
                                                        "-p", "no:cacheprovider", "tests/test_cuda.py"],
                                     cdir / "tests.log", timeout=min(step_cap, _remaining(deadline) - 120), env=env,
                                     say=say)
            summary["tests"].update(ran=True, runner="pytest")
    else:
        summary["tests"] = dict(ran=False, runner=None, returncode=None, seconds=0.0, last_line="--no-tests")
    rows = None
    if bench:
        bench_cmd = [sys.executable, "-m", "workflow", "bench", "--campaign", "--device", device,
                     "--reps", str(1 if smoke else bench_reps), "--json-out", str(cdir / "bench.json")]
        if smoke:
            bench_cmd += ["--width", "0.0625", "--models", "inception", "--precisions", "fp32", "--batch", "16"]
        elif fit:  # fitted to the budget: only the models its runs train, so that the budget goes to training
            bench_cmd += ["--models", *sorted(_models(profile))]
        summary["bench"] = _step("benchmark", bench_cmd, cdir / "bench.log",
                                 timeout=min(step_cap, _remaining(deadline) - 90), env=env, say=say)
        if (cdir / "bench.json").exists():
            rows = json.loads((cdir / "bench.json").read_text()).get("rows")
    if k is None:
        k, why = (2, "smoke: 2 at once") if smoke else choose_k(rows, device=device)
    else:
        why = "given (--k)"
    reserve = 30 if gpu else 20  # shutdown (checkpoints) and packing
    jobs = plan(profile, results_root=work / "results" / "runs", logs_root=work / "results" / "logs" / "runs",
                max_runs=max_runs)
    needed = {OBJECTS[o].dataset for o in profile.active()}
    present = set(present_data(profile)) & needed
    no_data = [j for j in jobs if j.status == "queued" and j.run.dataset not in present]
    for j in no_data:
        j.status = "no-data"
    todo = [j for j in jobs if j.status == "queued"]
    if fit and deadline is not None:
        todo, k, why = fit_runs(todo, rows, profile, seconds=_remaining(deadline) - reserve, k_max=k)
    summary.update(k=k, k_reason=why, fit=fit, started_planned=len(todo), no_data=[j.name for j in no_data])
    say(f"--- training: {len(todo)} of {len(jobs)} runs to start now, {k} at a time ({why})"
        + (f"; {len(no_data)} without their data set here (not started)" if no_data else ""))
    summary["train"] = _train(todo, profile_file, k=k, gpu=gpu, work=work, cdir=cdir, env=env, say=say,
                              datasets=sorted(present) if needed - present else None,
                              deadline=None if deadline is None else deadline - reserve)
    started_at = time.time() - (time.monotonic() - t0)
    for j in todo:
        began = j.log.exists() and j.log.stat().st_mtime >= started_at  # its job wrote its log in this campaign
        j.status = ("finished" if j.out.exists() else "stopped" if (checkpoint_step(j.out) or 0) > (j.step_before or 0)
                    else "failed" if began else "not reached")
    summary["runs"] = [record(j) for j in todo if j.status != "not reached"]
    summary["not_reached"] = [j.name for j in jobs if j.status in ("queued", "not reached")]
    summary["started"] = len(summary["runs"])
    summary["finished"] = sum(j.status == "finished" for j in todo)
    steps = sum(r["steps_this_call"] or 0 for r in summary["runs"])
    summary["steps_per_s_total"] = round(steps / summary["train"]["seconds"], 2) if summary["train"]["seconds"] else None
    logs = cdir / "logs"
    for j in todo:
        if j.status != "not reached" and j.log.exists():
            (logs / j.run.dataset).mkdir(parents=True, exist_ok=True)
            gzip_copy(j.log, logs / j.run.dataset / f"{j.log.name}.gz")
    summary.update(travel_bytes=travel_bytes, size_cap_bytes=size_cap)
    room = None if travel_bytes is None else size_cap - travel_bytes
    not_carried: list[str] = []
    files = pack_list(jobs, cdir, ckpt_room=room, not_carried=not_carried)
    summary["checkpoints_not_carried"] = not_carried
    summary["wall_s"] = round(time.monotonic() - t0, 1)
    (cdir / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    say(report(summary))
    if not_carried:
        say(f"checkpoints left behind ({len(not_carried)}): the next bundle could not take them within its size cap, "
            f"{size_cap / MIB:g} MiB ({travel_bytes:,} bytes travel already): {', '.join(not_carried)}")
    if pack_to:
        meta = dict(smoke=smoke, profile=profile.name, config=str(config), git_commit=summary["git_commit"])
        packed = pack([(cdir / "summary.json", "campaign record"), *files], pack_to, root=work,  # listed before it
                      part_mib=pack_part_mib, max_parts=pack_parts, meta=meta)
        left = [x["path"] for x in packed["left_out"]]
        say(f"packed {packed['files']} files into {len(packed['parts'])} part(s), {packed['bytes'] / MIB:.1f} MiB, in "
            f"{pack_to}" + (f"; left out (no room): {left}" if left else ""))
        summary["pack"] = packed
    summary["campaign_dir"] = str(cdir)
    return summary


def _train(jobs: list[Job], profile_file, *, k: int, gpu: bool, work: Path, cdir: Path, env: dict, say,
           datasets: list[str] | None, deadline: float | None) -> dict:
    """The training step (:mod:`workflow.campaign.train`): Snakemake where it runs here, else the same commands
    through xargs; its output in ``cdir``, what ran in the record. GPU utilisation sampled while it runs (nvidia-smi)."""
    if not jobs:
        return dict(scheduler=None, command=None, returncode=None, seconds=0.0, gpu_samples=[])
    if has_snakemake():
        scheduler, cmd, stdin = "snakemake", snakemake_command(profile_file, jobs, k=k, gpu=gpu, work=work,
                                                               datasets=datasets), None
    else:
        scheduler, stdin = "xargs", cdir / "jobs.txt"
        cmd = plain_command(jobs, k=k, jobs_file=stdin)
        say("--- Snakemake is not installed here: the same train commands, in the same order, through xargs -P "
            f"{k} ({stdin})")
    say(f"--- {scheduler}: {' '.join(cmd)}")
    samples: list[dict] = []
    t = time.monotonic()
    rc = run_until(cmd, deadline=deadline, env=env, cwd=work, log=cdir / f"{scheduler}.log", say=say,
                   grace_s=15 if gpu else 60, stdin=stdin,
                   tick=(lambda: samples.append(s) if (s := gpu_sample()) else None) if gpu else None)
    return dict(scheduler=scheduler, command=cmd, returncode=rc, stopped=rc is None,
                seconds=round(time.monotonic() - t, 1), gpu_samples=samples)


def gzip_copy(src: Path, dest: Path) -> None:
    """Copy a run log gzipped (no name or time in the header: the same log gives the same bytes). A training log is
    mostly progress-bar frames and compresses about tenfold, which keeps the committed records, and so the bundle
    for a GPU node, inside the size cap (:mod:`workflow.campaign.travel`); ``zcat`` or ``gzip.open`` reads it back."""
    with open(src, "rb") as f, open(dest, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as z:
            shutil.copyfileobj(f, z)


def _models(profile: Profile) -> set[str]:
    """The models the profile's runs train (what the benchmark measures when the plan is fitted to the budget)."""
    from dirdp.presets import PRESETS

    # each run's method's own model (the Papernot CNN) or the data set's; LATENT's is no image model (not benchmarked)
    return {methods.model_of(r.method, PRESETS[r.dataset].model)
            for r in profile.all_runs().values() if r.dataset in PRESETS and methods.spec(r.method).images}
