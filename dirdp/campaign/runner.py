"""The campaign driver (:func:`run_campaign`): the CUDA test lane and the benchmark as preparatory steps, K
chosen from the benchmark (:func:`choose_k`), the queue trained inside the budget, its summary written and
packed; :func:`status` says where every run of a profile's campaign stands."""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from dirdp.campaign.packing import MIB, pack, pack_list
from dirdp.campaign.queue import REPO, _now, describe, plan, run_queue
from dirdp.campaign.summary import _record, report
from dirdp.experiments import Profile

# smoke mode: the same queue machinery on CPU with tiny runs (the test suite runs it)
SMOKE_TRAINING = dict(device="cpu", width=0.0625, steps=4, q=0.05, train_subset=256, eval_every=2, threads=1,
                      bf16=False, channels_last=False)


def load_profile(config: str | Path, *, smoke: bool = False, overrides: dict | None = None) -> Profile:
    """The profile of ``config`` (a profile YAML, with what it ``extends:``, as the Snakefile reads it), with
    ``overrides`` of its ``training`` block; ``smoke``
    turns every run into a 4-step CPU run on a small training subset (:data:`SMOKE_TRAINING`)."""
    from dirdp import profile_schema

    path = Path(config)
    if not path.exists():
        raise ValueError(f"no profile {path}: give a config/<profile>.yaml (e.g. config/gpu.yaml).")
    cfg = profile_schema.load(path)
    training = dict(cfg.get("training") or {})
    if smoke:
        training.update(SMOKE_TRAINING)
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
    say(f"dirdp campaign: profile '{profile.name}' on {summary['device_name']}, "
        f"{f'budget {budget_s} s' if budget_s else 'no budget'}, results under {work / 'results'}")

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


def status(config: str | Path, *, workdir: str | Path | None = None) -> str:
    """Where every run of the profile's campaign stands, in queue order."""
    profile = load_profile(config)
    work = Path(workdir) if workdir else REPO
    jobs = plan(profile, results_root=work / "results" / "runs", logs_root=work / "results" / "logs" / "runs")
    done, redo = sum(j.done() for j in jobs), sum(j.out.exists() and not j.done() for j in jobs)
    again = f" ({redo} more finished by uncommitted code: trained again, redo_dirty)" if redo else ""
    return "\n".join([f"campaign of '{profile.name}' ({config}): {done} of {len(jobs)} runs finished{again}"]
                     + [describe(j) for j in jobs])
