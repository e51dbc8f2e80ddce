"""What a campaign did: one record per run it set out to train (:func:`record`) and the summary as text
(:func:`report`)."""

from __future__ import annotations

import json

from workflow.campaign.plan import Job, checkpoint_step


def record(job: Job) -> dict:
    """What one run did in this campaign: where it stands now (finished, stopped at a checkpoint, not finished),
    its step before and after, and the result it landed."""
    rec = json.loads(job.out.read_text()) if job.status == "finished" else None
    at = rec["steps"] if rec else checkpoint_step(job.out)
    resumed = None
    if job.log.exists():  # "resumed from step N" in the log of this campaign's attempt
        for line in job.log.read_text(errors="replace").splitlines():
            if line.startswith("resumed from step "):
                resumed = int(line.split()[3])
    done_now = None if at is None else at - (resumed or 0)
    return dict(run=job.name, out=str(job.out), status=job.status, step=at, steps=rec["steps"] if rec else None,
                resumed_from=resumed, steps_this_call=done_now,
                test_accuracy=rec["test_accuracy"] if rec else None)


def report(summary: dict) -> str:
    """The campaign's outcome as text: one line per run it set out to train, then the totals."""
    lines = [f"\n{'run':42s} {'status':13s} {'step':>11s} {'resumed at':>10s} {'test acc.':>9s}"]
    for r in summary["runs"]:
        step = f"{r['step']}" if r["step"] is not None else "-"
        resumed = f"{r['resumed_from']}" if r["resumed_from"] is not None else "-"
        acc = "" if r["test_accuracy"] is None else format(r["test_accuracy"], ".2f")
        lines.append(f"{r['run']:42s} {r['status']:13s} {step:>11s} {resumed:>10s} {acc:>9s}")
    train = summary.get("train") or {}
    util = [s["util_pct"] for s in train.get("gpu_samples") or []]
    lines.append(f"K = {summary['k']} ({summary['k_reason']}); training {train.get('seconds') or 0:.0f} s through "
                 f"{train.get('scheduler') or 'nothing'}, {summary['steps_per_s_total']} steps/s over all runs"
                 + (f"; GPU utilisation mean {sum(util) / len(util):.0f}% over {len(util)} samples" if util else ""))
    tests = summary.get("tests") or {}
    lane = ("ran (pytest): " + tests.get("last_line", "") if tests.get("ran") else
            "not run: " + (tests.get("last_line") or "?"))
    lines.append(f"runs started {summary['started']}, finished {summary['finished']}"
                 + (f"; {len(summary['no_data'])} without their data set here" if summary.get("no_data") else "")
                 + f"; CUDA test lane {lane}")
    if summary["not_reached"]:
        lines.append(f"not reached this time ({len(summary['not_reached'])}): the next campaign starts them")
    return "\n".join(lines)
