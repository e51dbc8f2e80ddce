"""What a campaign run did: one record per run it touched (:func:`_record`) and the summary as text
(:func:`report`)."""

from __future__ import annotations

import json

from workflow.campaign.queue import Job, _ckpt_step


def _record(job: Job) -> dict:
    """What one run did in this campaign run."""
    landed = job.out.exists() and (job.replaces is None or job.status == "finished")  # not the +dirty one it redoes
    rec = json.loads(job.out.read_text()) if landed else None
    steps_total = rec["steps"] if rec else None
    at = rec["steps"] if rec else _ckpt_step(job.ckpt)
    started_at = None
    if job.log.exists():  # "resumed from step N" in this campaign run's part of the log
        part = job.log.read_text(errors="replace").rsplit("\n=== ", 1)[-1]
        for line in part.splitlines():
            if line.startswith("resumed from step "):
                started_at = int(line.split()[3])
    done_now = None if at is None else at - (started_at or 0)
    return dict(run=job.name, out=str(job.out), status=job.status, returncode=job.returncode, wall_s=job.wall_s,
                step=at, steps=steps_total, resumed_from=started_at, steps_this_call=done_now,
                steps_per_s=round(done_now / job.wall_s, 2) if done_now and job.wall_s else None,
                test_accuracy=rec["test_accuracy"] if rec else None, replaces=job.replaces)


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
    if "started" in summary:
        tests = summary.get("tests") or {}
        lane = ("ran (pytest): " + tests.get("last_line", "") if tests.get("ran") else
                "not run: " + (tests.get("last_line") or "?"))
        lines.append(f"runs started {summary['started']}, finished {summary['finished']}"
                     + (f"; {len(summary['no_data'])} without their data set here" if summary.get("no_data") else "")
                     + f"; CUDA test lane {lane}")
    if summary["not_reached"]:
        lines.append(f"not reached this time ({len(summary['not_reached'])}): the next campaign run starts them")
    return "\n".join(lines)
