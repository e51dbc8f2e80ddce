"""The campaign driver (:func:`run_campaign`): the CUDA test lane and the benchmark as preparatory steps, K
chosen from the benchmark (:func:`workflow.campaign.fit.choose_k`), the queue trained inside the budget, its summary written and
packed; :func:`status` says where every run of a profile's campaign stands."""

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

from dirdp import methods
from workflow.campaign.fit import RUN_OVERHEAD, RUN_START_S, choose_k, fit_runs, run_seconds  # noqa: F401
from workflow.campaign.packing import MIB, pack, pack_list
from workflow.campaign.queue import REPO, _now, describe, plan, run_queue
from workflow.campaign.summary import _record, report
from workflow.experiments import Profile

# smoke mode: the same queue machinery on CPU with tiny runs (the test suite runs it)
SMOKE_TRAINING = dict(device="cpu", width=0.0625, steps=4, q=0.05, train_subset=256, eval_every=2, threads=1,
                      bf16=False, channels_last=False)


def load_profile(config: str | Path, *, smoke: bool = False, overrides: dict | None = None) -> Profile:
    """The profile of ``config`` (a profile YAML, with what it ``extends:``, as the Snakefile reads it), with
    ``overrides`` of its ``training`` block; ``smoke``
    turns every run into a 4-step CPU run on a small training subset (:data:`SMOKE_TRAINING`), of the profile
    ``<name>-smoke`` (its results under ``results/runs/<name>-smoke/``, never at the real runs' paths)."""
    from workflow import profile_schema

    path = Path(config)
    if not path.exists():
        raise ValueError(f"no profile {path}: give a config/<profile>.yaml (e.g. config/gpu.yaml).")
    cfg = profile_schema.load(path)
    training = dict(cfg.get("training") or {})
    if smoke:  # its own profile name, so its 4-step runs never sit at a real run's path (results/runs/<name>-smoke/)
        training.update(SMOKE_TRAINING)
        cfg = {**cfg, "profile": f"{cfg['profile']}-smoke"}
    training.update(overrides or {})
    return Profile.from_config({**cfg, "training": training})


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


def run_campaign(config: str | Path = "config/gpu.yaml", *, budget_s: float | None = 540, k: int | None = None,
                 pack_to: str | Path | None = None, smoke: bool = False, workdir: str | Path | None = None,
                 max_runs: int | None = None, tests: bool = True, bench: bool = True, bench_reps: int = 10,
                 require_clean: bool = False, fit: bool | None = None, travel_bytes: int | None = None,
                 size_cap: int | None = None, pack_part_mib: float = 15.5, pack_parts: int = 4, say=print) -> dict:
    """The whole campaign in one call (see the module docstring). ``workdir`` is the folder that holds
    ``results/`` (the repository by default; a temporary folder for ``smoke``). Returns the summary that
    is also written to ``results/campaign/<profile>/<UTC time>/summary.json``.

    ``fit`` (default: with a budget and no ``k``): start only the runs that can finish in the budget
    (:func:`fit_runs`, from the benchmark's steps/s). Runs whose data set is not under the data root (a bundle for
    a GPU node without network holds only the data set(s) it trains) are not started. ``travel_bytes``: what the
    bundle this tree came in weighed (``.gpu/TRAVEL.json``, by ``scripts/gpu_prepare.sh``), ``size_cap`` the cap it
    was prepared under (:func:`workflow.campaign.travel.measured` by default): checkpoints are packed only while the
    next bundle can still take them within the cap. The pack: at most ``pack_parts`` files of ``pack_part_mib``."""
    import tempfile

    from workflow.campaign.travel import measured

    t0 = time.monotonic()
    deadline = t0 + budget_s if budget_s else None
    prepared_bytes, prepared_cap = measured(REPO)  # scripts/gpu_prepare.sh's measurement of the bundle, if any
    travel_bytes = prepared_bytes if travel_bytes is None else travel_bytes
    size_cap = prepared_cap if size_cap is None else size_cap
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
        bench_cmd = [sys.executable, "-m", "dirdp", "bench", "--campaign", "--device", device,
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
    reserve = 30 if device.startswith("cuda") else 20  # shutdown (checkpoints) and packing
    jobs = plan(profile, results_root=work / "results" / "runs", logs_root=work / "results" / "logs" / "runs",
                max_runs=max_runs)
    no_data = _without_data(jobs)
    for j in no_data:
        j.status = "no-data"
    todo = [j for j in jobs if j.status == "queued"]
    if fit and deadline is not None:
        chosen, k, why = fit_runs(todo, rows, profile, seconds=_remaining(deadline) - reserve, k_max=k)
        todo = chosen
    threads = max(1, (os.cpu_count() or 2) // k) if device.startswith("cuda") else None
    for j in todo:  # the GPU campaign's CPU share per run
        if threads:
            j.args[j.args.index("--threads") + 1] = str(threads)
            j.slots = 1
    summary.update(k=k, k_reason=why, fit=fit, started_planned=len(todo),
                   no_data=[j.name for j in no_data])
    say(f"--- training: {len(todo)} of {len(jobs)} runs to start now, {k} at a time ({why})"
        + (f"; {len(no_data)} without their data set here (not started)" if no_data else ""))
    samples: list[dict] = []
    t_train = time.monotonic()
    run_queue(todo, k=k, deadline=None if deadline is None else deadline - reserve, env=env,
              grace_s=15 if device.startswith("cuda") else 60, say=say, hold=_dirty_code if require_clean else None,
              sample=(lambda: samples.append(s) if (s := gpu_sample()) else None) if device.startswith("cuda") else None)
    summary["train_s"] = round(time.monotonic() - t_train, 1)
    summary["gpu_samples"] = samples
    summary["runs"] = [_record(j) for j in jobs if j.status not in ("queued", "done", "no-data")]
    summary["not_reached"] = [j.name for j in jobs if j.status == "queued"]
    summary["started"] = sum(j.status not in ("queued", "done", "no-data") for j in jobs)
    summary["finished"] = sum(j.status == "finished" for j in jobs)
    steps = sum(r["steps_this_call"] or 0 for r in summary["runs"])
    summary["steps_per_s_total"] = round(steps / summary["train_s"], 2) if summary["train_s"] else None
    logs = cdir / "logs"
    for j in jobs:
        if j.log.exists() and j.status not in ("queued", "done", "no-data"):
            (logs / j.run.dataset).mkdir(parents=True, exist_ok=True)
            gzip_copy(j.log, logs / j.run.dataset / f"{j.log.name}.gz")
    summary.update(travel_bytes=travel_bytes, size_cap_bytes=size_cap)
    room = None if travel_bytes is None else size_cap - travel_bytes
    not_carried: list[str] = []
    pack_list(jobs, cdir, ckpt_room=room, not_carried=not_carried)
    summary["checkpoints_not_carried"] = not_carried
    summary["wall_s"] = round(time.monotonic() - t0, 1)
    (cdir / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    say(report(summary))
    if not_carried:
        say(f"checkpoints left behind ({len(not_carried)}): the next bundle could not take them within its size cap, "
            f"{size_cap / MIB:g} MiB ({travel_bytes:,} bytes travel already): {', '.join(not_carried)}")
    if pack_to:
        packed = pack(pack_list(jobs, cdir, ckpt_room=room), pack_to, root=work, part_mib=pack_part_mib,
                      max_parts=pack_parts,
                      meta=dict(smoke=smoke, profile=profile.name, config=str(config), git_commit=summary["git_commit"]))
        say(f"packed {packed['files']} files into {len(packed['parts'])} part(s), {packed['bytes'] / MIB:.1f} MiB, in "
            f"{pack_to}" + (f"; left out (no room): {[x['path'] for x in packed['left_out']]}" if packed["left_out"] else ""))
        summary["pack"] = packed
    summary["campaign_dir"] = str(cdir)
    return summary


def gzip_copy(src: Path, dest: Path) -> None:
    """Copy a run log gzipped (no name or time in the header: the same log gives the same bytes). A training log is
    mostly progress-bar frames and compresses about tenfold, which keeps the committed records, and so the bundle
    for a GPU node, inside the size cap (:mod:`workflow.campaign.travel`); ``zcat`` or ``gzip.open`` reads it back."""
    with open(src, "rb") as f, open(dest, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as z:
            shutil.copyfileobj(f, z)


def _models(profile: Profile) -> set[str]:
    """The models the profile's runs train (what the benchmark measures when the queue is fitted to the budget)."""
    from dirdp.presets import PRESETS

    # each run's method's own model (the Papernot CNN) or the data set's; LATENT's is no image model (not benchmarked)
    return {methods.model_of(r.method, PRESETS[r.dataset].model)
            for r in profile.all_runs().values() if r.dataset in PRESETS and methods.spec(r.method).images}


def _without_data(jobs: list) -> list:
    """The jobs whose data set is not under the data root here (``$DIRDP_DATA``): a bundle for a GPU node without
    network holds only the data set(s) it trains (scripts/gpu_prepare.sh)."""
    from dirdp.data import missing_files

    missing: dict[str, bool] = {}
    out = []
    for j in jobs:
        if j.status != "queued":
            continue
        ds = j.run.dataset
        if ds not in missing:
            try:
                missing[ds] = bool(missing_files(ds))
            except (ValueError, KeyError):
                missing[ds] = False
        if missing[ds]:
            out.append(j)
    return out


def _dirty_code() -> str | None:
    """Why a run must not start now: the code differs from its commit (its provenance would say "+dirty")."""
    from dirdp.provenance import git_commit

    if git_commit(REPO).endswith("+dirty"):
        return "uncommitted code changes (a run started now would record '+dirty'); commit them and it starts"
    return None


def status(config: str | Path, *, workdir: str | Path | None = None) -> str:
    """Where every run of the profile's campaign stands, in queue order."""
    profile = load_profile(config)
    work = Path(workdir) if workdir else REPO
    jobs = plan(profile, results_root=work / "results" / "runs", logs_root=work / "results" / "logs" / "runs")
    done, redo = sum(j.done() for j in jobs), sum(j.out.exists() and not j.done() for j in jobs)
    again = f" ({redo} more finished by uncommitted code: trained again, redo_dirty)" if redo else ""
    return "\n".join([f"campaign of '{profile.name}' ({config}): {done} of {len(jobs)} runs finished{again}"]
                     + [describe(j) for j in jobs])
