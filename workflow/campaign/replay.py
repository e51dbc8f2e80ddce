"""Replay a stretch of a run with committed code and compare it bit for bit with what the run recorded.

A result whose provenance has a session of uncommitted code ("+dirty") is trained again by a campaign with
``redo_dirty`` (eight hours a full-width run on one core). When the run's checkpoints before and after that session
are in git history, there is a cheaper and exact answer to the question "did the uncommitted code compute what the
committed code computes?": load the checkpoint from before the session, train with this commit's code to the step
of the checkpoint after it, and compare every tensor of the model, the optimizer and the sampler, and the curves,
with the later checkpoint. Training resumes exactly (``tests/test_training.py``: a killed and resumed run equals an
uninterrupted one) and, on one processor kind at one thread, is deterministic; so bit-for-bit equality says that
every step of the stretch, the uncommitted session's included, is what committed code makes of it. Any difference
leaves the result to ``redo_dirty``.

The answer is written to ``results/campaign/<profile>/replays/<dataset>/<run>.json`` (:func:`record_path`), which
:func:`workflow.campaign.plan.made_dirty` reads: a result whose every "+dirty" session lies inside a replay that
matched is not trained again.

    python -m workflow.campaign.replay results/runs/cpu/fashionmnist/alg1_w1_bf16_eps1_seed0.json \\
        --before e034784 --after bdad97e
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time
from pathlib import Path

def _repo(result: Path) -> Path:
    """The git checkout that holds result file ``result`` (its results/ lives at that checkout's root)."""
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=Path(result).resolve().parent,
                         capture_output=True, text=True)
    if top.returncode:
        raise ValueError(f"{result} is not inside a git checkout: a replay reads the run's checkpoints from history")
    return Path(top.stdout.strip())


def record_path(result: Path) -> Path:
    """Where the replay record of result ``<repo>/results/runs/<profile>/<dataset>/<run>.json`` lives:
    ``<repo>/results/campaign/<profile>/replays/<dataset>/<run>.json``."""
    result = Path(result).resolve()
    return (result.parents[4] / "results/campaign" / result.parent.parent.name / "replays" / result.parent.name
            / result.name)


def _checkpoint_at(repo: Path, commit: str, ckpt: str):
    """The checkpoint file ``ckpt`` as commit ``commit`` holds it: (full commit, blob, loaded checkpoint)."""
    import torch

    def _git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True).stdout

    full = _git("rev-parse", "--verify", f"{commit}^{{commit}}").decode().strip()
    try:
        blob = _git("rev-parse", f"{full}:{ckpt}").decode().strip()
    except subprocess.CalledProcessError:
        raise ValueError(f"commit {full[:12]} has no {ckpt}: give commits that hold the run's checkpoint") from None
    data = _git("cat-file", "blob", blob)
    return full, blob, torch.load(io.BytesIO(data), map_location="cpu", weights_only=False)


def _differences(a, b, where: str = "") -> list[str]:
    """Where two checkpoint entries (nested dicts, lists, tensors, numbers) differ, bit for bit."""
    import torch

    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        same = (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.dtype == b.dtype
                and a.shape == b.shape and torch.equal(a, b))
        return [] if same else [where]
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}" for k in sorted(set(a) ^ set(b), key=str)]
        for k in a.keys() & b.keys():
            out += _differences(a[k], b[k], f"{where}.{k}")
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [where]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{where}[{i}]")]
    return [] if a == b else [where]


def _tensors(x) -> int:
    import torch

    if isinstance(x, torch.Tensor):
        return 1
    if isinstance(x, dict):
        return sum(_tensors(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return sum(_tensors(v) for v in x)
    return 0


def replay(result: Path, before: str, after: str, *, data_root=None, threads: int | None = None, progress: bool = True,
           require_clean: bool = True) -> dict:
    """Train run ``result`` from its checkpoint at commit ``before`` to the step of its checkpoint at commit
    ``after`` with this checkout's code, and compare; returns the record (also written to :func:`record_path`)."""
    import torch

    from dirdp import loop, methods, provenance
    from dirdp.data import get_spec
    from dirdp.training import RunConfig, load_data

    result = Path(result).resolve()
    repo = _repo(result)
    rec = json.loads(result.read_text())
    ckpt = str(result.with_name(result.name + ".ckpt.pt").relative_to(repo))
    before_commit, before_blob, start = _checkpoint_at(repo, before, ckpt)
    after_commit, after_blob, end = _checkpoint_at(repo, after, ckpt)
    step0, step1 = start["state"]["step"], end["state"]["step"]
    if not step0 < step1:
        raise ValueError(f"the checkpoint at {before} is at step {step0}, the one at {after} at {step1}: "
                         "give the earlier commit first")
    here = provenance.git_state()["git_commit"]
    if require_clean and here.endswith("+dirty"):
        raise ValueError("the checkout has uncommitted code changes: a replay must run committed code; commit first")
    sessions = [s for s in end["state"].get("sessions", []) if step0 <= s["start_step"] < step1]
    if threads is None:  # the run's own: the thread count changes the order of float sums
        counts = {s.get("torch_threads") for s in sessions} - {None}
        if len(counts) > 1:
            raise ValueError(f"the sessions of steps {step0} to {step1} ran at {sorted(counts)} threads: no replay "
                             "at one count can equal them")
        threads = counts.pop() if counts else 1
    cfg = RunConfig(**{**rec["provenance"]["config"], "device": "cpu"})
    if start["identity"] != cfg.identity() or end["identity"] != cfg.identity():
        raise ValueError(f"the checkpoints at {before} and {after} are not both of the run {result.relative_to(repo)}")
    torch.set_num_threads(threads)
    noise = methods.get(cfg.method).calibrate(cfg.eps, cfg.protocol, max_grad_norm=cfg.max_grad_norm)
    data = load_data(cfg, data_root)
    t0 = time.perf_counter()
    with loop.isolated_rng(torch.device("cpu")):
        learner = methods.get(cfg.method).learner(cfg, data, get_spec(cfg.dataset), noise)
        learner.load_state_dict(start)
        state = start["state"]
        # to step1 as the run's own loop went: an evaluation and a loss entry at step1 itself are the replay's end
        # (the run's loop would have made them only on its eval/log grid), so the curves compare up to step1's
        state, _ = loop.run(learner, steps=step1, eval_every=cfg.eval_every, log_every=cfg.log_every, state=state,
                            progress=progress)
    ours = learner.state_dict()
    theirs = {k: v for k, v in end.items() if k not in ("identity", "state")}
    differ = _differences(ours, theirs, "")
    for curve, every in (("acc_curve", cfg.eval_every), ("loss_curve", cfg.log_every)):
        mine = [p for p in state[curve] if p[0] < step1 or step1 % every == 0]
        differ += _differences(mine, end["state"][curve], f".state.{curve}")
    differ += _differences(state["empty_batches"], end["state"]["empty_batches"], ".state.empty_batches")
    out = dict(
        result=str(result.relative_to(repo)), checkpoint=ckpt,
        before=dict(commit=before_commit, blob=before_blob, step=step0),
        after=dict(commit=after_commit, blob=after_blob, step=step1),
        sessions_replayed=sessions, replayed_by=here, threads=threads,
        processor=provenance.collect({}, seed=0)["device"], torch=torch.__version__,
        tensors_compared=_tensors(theirs), differences=differ[:50], n_differences=len(differ),
        equal=not differ, wall_s=round(time.perf_counter() - t0, 1),
    )
    path = record_path(result)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    return out


def covers(record: dict, rec: dict) -> bool:
    """Whether a replay that matched covers every "+dirty" session of result record ``rec``: each such session
    starts inside the replayed steps, and the next session (or the run's end) is at or before the replay's end."""
    if not record.get("equal") or str(record.get("replayed_by", "+dirty")).endswith("+dirty"):
        return False  # a difference, or a replay by uncommitted code, answers nothing
    sessions = rec["provenance"].get("sessions") or []
    if "+dirty" in str(rec["provenance"].get("git_commit", "")) and not any(
            "+dirty" in str(s.get("git_commit", "")) for s in sessions):
        return False  # uncommitted code that no session places: no stretch of steps to replay
    lo, hi = record["before"]["step"], record["after"]["step"]
    for i, s in enumerate(sessions):
        if "+dirty" in str(s.get("git_commit", "")):
            stop = sessions[i + 1]["start_step"] if i + 1 < len(sessions) else rec.get("steps")
            if not (lo <= s["start_step"] and stop is not None and stop <= hi):
                return False
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m workflow.campaign.replay", description=__doc__.split("\n\n")[0])
    ap.add_argument("result", type=Path, help="the run's result JSON (results/runs/<profile>/<dataset>/<run>.json)")
    ap.add_argument("--before", required=True, help="a commit holding the run's checkpoint before the stretch")
    ap.add_argument("--after", required=True, help="a commit holding the run's checkpoint after it")
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--threads", type=int, default=None,
                    help="torch threads (default: the replayed sessions' own, as their checkpoint records them)")
    args = ap.parse_args(argv)
    if not args.result.is_file():
        print(f"error: no result {args.result}: give a finished run's result JSON", file=sys.stderr)
        return 2
    try:
        out = replay(args.result, args.before, args.after, data_root=args.data_root, threads=args.threads)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"{out['result']}: steps {out['before']['step']} to {out['after']['step']} replayed, "
          f"{'bit for bit equal' if out['equal'] else str(out['n_differences']) + ' differences'} "
          f"({record_path(args.result)})")
    return 0 if out["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
