"""Checkpoints are an interface: a run checkpointed by an earlier commit loads under this one, resumes at its step
with its sampler and optimizer state, and ends bit-identical to an uninterrupted run of the same config made by this
code on the same machine.

tests/data/ckpt_421b8cb/ holds checkpoints written at step 5 of 12 by commit 421b8cb (before the method registry and
the one loop), for Algorithm 1 at eps = 1 and eps = inf and for DP-SGD at eps = 2, on the tiny MNIST of
conftest.tiny_root, and ``expected.json``: each run's final params_sha256 and curves, uninterrupted, under that
commit. Made by a throwaway script run in a checkout of 421b8cb (patching ``training._save_atomic`` to keep the step-5
checkpoint), on a 2-core machine at 2 intra-op threads.

What is portable and what is not. The float values in the fixture (weights, BatchNorm statistics, the open loss sum)
came from that machine's CPU kernels; another processor computes other last bits, so no test here compares floats
from the fixture bit for bit. Its integer content is portable: the sampler's generator states (torch's CPU generator
is integer arithmetic), the optimizer state, step, counters and the identity. Measured on an "Intel Xeon Processor"
(2 cores, avx512_bf16) that is not the fixture's: 421b8cb's own code gives there, uninterrupted, the same
params_sha256 as this code (alg1_inf 98cb7d87..., not the fixture's 3d8942b4...), so the differences below are the
processor's, not the code's (at step 5 the two are bit-equal there, for all three runs). The step-5 weights differ
from the fixture's by a relative L2 of 1.6e-2 (alg1_inf: non-private steps at lr 0.1 through BatchNorm over ~16
examples amplify last-bit differences), 2.5e-6 (alg1) and 1.1e-8 (dpsgd); the generator states are equal. So:

1. ``..._loads_and_resumes_at_its_step_with_its_state``: the fixture loads, the run says it resumed at step 5, its
   sessions start at 5, and everything integer in it (generator states, optimizer state, step, counters, accuracy
   curve, tensor names, shapes and dtypes, BatchNorm's num_batches_tracked) equals what an uninterrupted run made now
   holds at step 5; its floats are that run's within ``STATE_RTOL``. The batches the resumed run draws (steps 6-12)
   are the ones the uninterrupted run draws: the sampler state was read and used.
2. ``..._resumes_to_the_model_an_uninterrupted_run_ends_with`` (the proof of compatibility): the fixture, with only
   its float values replaced by this machine's step-5 values (weights, BatchNorm statistics, the open loss sum and the
   loss curve), everything else as 421b8cb wrote it, resumes to the uninterrupted run's final params_sha256 and curves
   bit for bit, on the same machine, by the same code, at the same pinned thread count. Where the fixture's floats are
   already bit-equal to this machine's (its own processor), the replacement changes nothing and the resumed run and
   the uninterrupted one also end with expected.json's params_sha256.
3. ``..._ends_with_the_curves_that_commit_recorded``: the fixture resumed as it is, and the uninterrupted run, end with
   expected.json's curves within ``LOSS_RTOL`` and ``ACC_TOL``.

Tolerances (differences measured on the machine above, against expected.json): the loss curve of the resumed fixture
equals it to the 5 decimals recorded; the uninterrupted run's differs by up to 3.0e-3 relative (alg1_inf: 2.19073 vs
2.1974 at step 12; 7.0e-4 at step 4), alg1's and dpsgd's not at all. ``LOSS_RTOL`` = 1e-2 (3x the worst measured).
Accuracy: within one test example of the tiny test split (100 / 32 = 3.125 points); measured 0. ``STATE_RTOL`` = 0.1
relative L2 over all float tensors of the step-5 state (6x the worst measured, 1.6e-2; another seed's initialisation is
~1 away).

The pinned thread count: the bit-exact comparisons are within one process at one count, so any count would do; 2 is
the fixture's (on its processor, test 2's expected.json check then holds).

tests/data/ckpt_d1d5455/ holds the same for the code the CPU campaign's runs in flight were started with (commit
d1d5455, before the workflow moved out of the library): Algorithm 1 in bf16 autocast with channels_last (the
precision of the campaign's full-width runs) at eps = 1 and eps = inf, checkpointed at step 5 of 12 the same way, at
2 threads. bf16 kernels differ between processors more than float32 ones, so for these two the checks that compare
floats with another processor's (the step-5 state within ``STATE_RTOL``, test 3's curves) are made only where the
fixture's floats are this machine's bit for bit; tests 1 and 2 hold everywhere."""

import contextlib
import io
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from dirdp import sampling, training
from dirdp.data import load
from dirdp.training import make_config, train

from conftest import pinned_torch_threads

FIXTURES = {commit: Path(__file__).parent / "data" / f"ckpt_{commit}" for commit in ("421b8cb", "d1d5455")}
EXPECTED = {(commit, name): exp for commit, folder in FIXTURES.items()
            for name, exp in json.loads((folder / "expected.json").read_text()).items()}
FIXTURE_THREADS = 2  # torch's intra-op threads when the fixture was made
fixture_threads = pinned_torch_threads(FIXTURE_THREADS, "module")
RESUME_STEP, STEPS = 5, 12
LOSS_RTOL = 1e-2   # loss curve against expected.json (another processor): relative
ACC_TOL = 100 / 32  # accuracy curve against expected.json: one example of the 32 in the tiny test split, in points
STATE_RTOL = 0.1   # the fixture's step-5 floats against this machine's: relative L2 over all float tensors


def _cfg(exp: dict):
    return make_config("mnist", math.inf if exp["eps"] == "inf" else float(exp["eps"]), 0, method=exp["method"],
                       steps=STEPS, q=0.25, width=0.0625, eval_every=6, log_every=4, checkpoint_every=5,
                       bf16=exp.get("bf16", False), channels_last=exp.get("channels_last", False))


def _train(cfg, out: Path, data) -> dict:
    """``train`` with what the run printed on stderr (``stderr``) and the batches it drew (``draws``) added."""
    draws, sample = [], sampling.PoissonSampler.sample

    def recorded(self):
        idx = sample(self)
        draws.append(idx.tolist())
        return idx

    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
        mp.setattr(sampling.PoissonSampler, "sample", recorded)
        res = train(cfg, out, data=data, progress=False)
    return dict(res, stderr=err.getvalue(), draws=draws)


def _uninterrupted(cfg, out: Path, data) -> tuple[dict, dict]:
    """An uninterrupted run and the checkpoint it wrote at step 5 (kept as ``training._save_atomic`` writes it)."""
    kept, save = [], training._save_atomic

    def keep(obj, path):
        save(obj, path)
        kept.append(torch.load(path, weights_only=False))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(training, "_save_atomic", keep)
        res = _train(cfg, out, data)
    return res, next(c for c in kept if c["state"]["step"] == RESUME_STEP)


def _floats(ckpt: dict) -> dict:
    return {k: v for k, v in ckpt["model"].items() if v.is_floating_point()}


def _rel_l2(a: dict, b: dict) -> float:
    num = sum(float(((a[k].double() - b[k].double()) ** 2).sum()) for k in b)
    return math.sqrt(num / sum(float((b[k].double() ** 2).sum()) for k in b))


def _with_floats_of(fixture: dict, ours: dict) -> dict:
    """The fixture checkpoint with its float values replaced by ours: weights and BatchNorm statistics, the open loss
    sum and the loss curve (the mean losses of the steps before). Everything else stays as 421b8cb wrote it."""
    model = {k: ours["model"][k] if v.is_floating_point() else v for k, v in fixture["model"].items()}
    state = dict(fixture["state"], loss_sum=ours["state"]["loss_sum"], loss_curve=ours["state"]["loss_curve"])
    return dict(fixture, model=type(fixture["model"])(model), state=state)


@pytest.fixture(scope="module")
def runs(tiny_root, tmp_path_factory):
    """Per fixture run, made once: ``whole`` (uninterrupted, now), ``step5`` (its checkpoint at step 5),
    ``fixture`` (the fixture checkpoint as loaded), ``resumed`` (the fixture resumed as it is) and ``transplant``
    (the fixture with this machine's step-5 floats, resumed)."""
    data = {s: load("mnist", s, root=tiny_root, download=False) for s in ("train", "test")}
    made = {}

    def get(case: tuple[str, str]) -> dict:
        if case not in made:
            (commit, name), exp = case, EXPECTED[case]
            if exp["method"] == "dpsgd":
                pytest.importorskip("opacus")
            cfg, tmp = _cfg(exp), tmp_path_factory.mktemp(name)
            whole, step5 = _uninterrupted(cfg, tmp / "whole.json", data)
            fixture = torch.load(FIXTURES[commit] / f"{name}.ckpt.pt", weights_only=False)
            shutil.copy(FIXTURES[commit] / f"{name}.ckpt.pt", tmp / "resumed.json.ckpt.pt")
            resumed = _train(cfg, tmp / "resumed.json", data)
            torch.save(_with_floats_of(fixture, step5), tmp / "transplant.json.ckpt.pt")
            transplant = _train(cfg, tmp / "transplant.json", data)
            made[case] = dict(exp=exp, whole=whole, step5=step5, fixture=fixture, resumed=resumed,
                              transplant=transplant)
        return made[case]

    return get


def _same_bits(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


CASES = sorted(EXPECTED)
IDS = [f"{commit}-{name}" for commit, name in CASES]


def _portable_floats(r: dict) -> bool:
    """Whether the fixture's floats may be compared with another processor's: float32 runs, or a bf16 run made on
    this very processor (its step-5 floats are this machine's bit for bit)."""
    return not r["exp"].get("bf16") or _same_bits(_floats(r["fixture"]), _floats(r["step5"]))


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_checkpoint_of_an_earlier_commit_loads_and_resumes_at_its_step_with_its_state(case, runs):
    r = runs(case)
    fixture, step5, resumed, whole = r["fixture"], r["step5"], r["resumed"], r["whole"]
    assert f"resumed from step {RESUME_STEP} of {STEPS}" in resumed["stderr"]
    # the sessions the fixture recorded (421b8cb recorded none: the list then begins at the resume), then this one
    before = [(x["start_step"], x["torch_threads"]) for x in fixture["state"].get("sessions", [])]
    assert [(x["start_step"], x["torch_threads"]) for x in resumed["provenance"]["sessions"]] == before + [
        (RESUME_STEP, FIXTURE_THREADS)]
    assert before == ([] if case[0] == "421b8cb" else [(0, FIXTURE_THREADS)])
    # its integer content is what this code holds at step 5: the identity, the sampler's generators, the optimizer
    # (SGD without momentum: no per-parameter state, its param groups), the counters and the model's layout
    assert fixture.keys() == step5.keys() and fixture["identity"] == step5["identity"]
    assert torch.equal(fixture["g_size"], step5["g_size"]) and torch.equal(fixture["g_dev"], step5["g_dev"])
    assert fixture["optimizer"] == step5["optimizer"]
    mine = {k: v for k, v in step5["state"].items() if k not in ("elapsed", "sessions", "loss_sum", "loss_curve")}
    assert {k: fixture["state"][k] for k in mine} == mine
    assert [s for s, _ in fixture["state"]["loss_curve"]] == [s for s, _ in step5["state"]["loss_curve"]]
    assert [(k, v.shape, v.dtype) for k, v in fixture["model"].items()] == [
        (k, v.shape, v.dtype) for k, v in step5["model"].items()]
    assert all(torch.equal(v, step5["model"][k]) for k, v in fixture["model"].items() if not v.is_floating_point())
    # its floats are this machine's within STATE_RTOL (the same run, other kernels)
    if _portable_floats(r):
        assert _rel_l2(_floats(fixture), _floats(step5)) < STATE_RTOL
        assert fixture["state"]["loss_sum"] == pytest.approx(step5["state"]["loss_sum"], rel=LOSS_RTOL)
    # the sampler state was read and used: the resumed run draws the uninterrupted run's batches of steps 6-12
    assert len(whole["draws"]) == STEPS and resumed["draws"] == whole["draws"][RESUME_STEP:]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_checkpoint_of_an_earlier_commit_resumes_to_the_model_an_uninterrupted_run_ends_with(case, runs):
    r = runs(case)
    transplant, whole = r["transplant"], r["whole"]
    assert f"resumed from step {RESUME_STEP} of {STEPS}" in transplant["stderr"]
    assert transplant["draws"] == whole["draws"][RESUME_STEP:]
    assert transplant["params_sha256"] == whole["params_sha256"]
    assert transplant["loss_curve"] == whole["loss_curve"] and transplant["accuracy_curve"] == whole["accuracy_curve"]
    if _same_bits(_floats(r["fixture"]), _floats(r["step5"])):  # this is the fixture's processor: it was a no-op
        assert r["resumed"]["params_sha256"] == whole["params_sha256"] == r["exp"]["params_sha256"]


def _close_curves(got: list, want: list, tol: float, rel: bool) -> bool:
    return [s for s, _ in got] == [s for s, _ in want] and all(
        abs(a - b) <= (tol * abs(b) if rel else tol) for (_, a), (_, b) in zip(got, want))


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("run", ["resumed", "whole"])
def test_a_checkpoint_of_an_earlier_commit_ends_with_the_curves_that_commit_recorded(case, run, runs):
    r = runs(case)
    if not _portable_floats(r):
        pytest.skip("a bf16 fixture made on another processor: its curves are that processor's")
    res, exp = r[run], r["exp"]
    assert _close_curves(res["loss_curve"], exp["loss_curve"], LOSS_RTOL, rel=True), (res["loss_curve"],
                                                                                      exp["loss_curve"])
    assert _close_curves(res["accuracy_curve"], exp["accuracy_curve"], ACC_TOL, rel=False), (
        res["accuracy_curve"], exp["accuracy_curve"])


ROOT = Path(__file__).resolve().parents[1]
COMMITTED = sorted((ROOT / "results" / "runs").glob("*/*/*.ckpt.pt"))
PARKED = sorted((p.parent.name, result) for p in (ROOT / "results" / "campaign").glob("*/parked.json")
                for result in json.loads(p.read_text())["parked"])


def _resumes_under_this_code(ckpt_path: Path, out: Path) -> dict:
    """The checkpoint at ``ckpt_path`` is the run the profile declares at ``out``, with the DAG's train arguments
    (identity), and its weights load into the model this code builds for it; returns the checkpoint."""
    from dirdp import methods
    from dirdp.cli import build_parser, parse
    from dirdp.data import get_spec
    from workflow.campaign import plan

    profile = out.parts[-3]
    prof = plan.load_profile(ROOT / "config" / f"{profile}.yaml")
    (job,) = [j for j in plan.plan(prof, results_root=out.parents[2]) if j.out == out]
    args = parse(build_parser(), ["train", *job.args])
    cfg = make_config(args.dataset, args.eps, args.seed, method=args.method, steps=args.steps, q=args.q,
                      width=args.width, norm=args.norm, train_subset=args.train_subset, device="cpu", bf16=args.bf16,
                      channels_last=args.channels_last, eval_every=args.eval_every,
                      checkpoint_every=args.checkpoint_every)
    ckpt = training._load_checkpoint(ckpt_path, cfg, torch.device("cpu"))  # raises for another run's checkpoint
    net = methods.get(cfg.method).build_model(cfg, get_spec(cfg.dataset))
    net.load_state_dict(ckpt["model"])
    assert 0 < ckpt["state"]["step"] < cfg.steps
    return ckpt


@pytest.mark.parametrize("ckpt_path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_a_committed_checkpoint_is_the_run_its_profile_declares_there_and_loads(ckpt_path):
    """The campaign's checkpoints in results/runs/ (its runs in flight) resume under this code."""
    _resumes_under_this_code(ckpt_path, ckpt_path.with_name(ckpt_path.name.removesuffix(".ckpt.pt")))


@pytest.mark.parametrize("profile, result", PARKED, ids=[Path(r).name for _, r in PARKED])
def test_a_parked_checkpoint_is_in_history_and_is_the_run_its_profile_declares_there(profile, result, tmp_path):
    """Each checkpoint the ledger (results/campaign/<profile>/parked.json) says history holds is there, at the
    bytes and step the ledger says, and resumes under this code (workflow.campaign.parked restores it at a start)."""
    from workflow.campaign import parked

    if (ROOT / ".git" / "shallow").exists():
        pytest.skip("a shallow clone holds no history: git fetch --unshallow")
    entry = parked.read(ROOT, profile)[result]
    assert entry["checkpoint"] == result + ".ckpt.pt"
    blob = subprocess.run(["git", "cat-file", "blob", entry["blob"]], cwd=ROOT, capture_output=True, check=True).stdout
    assert len(blob) == entry["bytes"]
    assert subprocess.run(["git", "rev-parse", f"{entry['commit']}:{entry['checkpoint']}"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.strip() == entry["blob"]
    out = tmp_path / result  # the same path under another root: the profile's run there
    out.parent.mkdir(parents=True)
    path = out.with_name(out.name + ".ckpt.pt")
    path.write_bytes(blob)
    assert _resumes_under_this_code(path, out)["state"]["step"] == entry["step"]
