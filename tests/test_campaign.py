"""The campaign machinery (workflow.campaign): queue order, K at a time, budget cut-off with checkpoint and
resume, pack and unpack. The GPU campaign's --smoke mode is the same code on CPU with 4-step runs."""

import gzip
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import torch

from workflow import campaign
from workflow.experiments import Profile

REPO = Path(__file__).resolve().parents[1]


def test_gpu_queue_puts_the_open_questions_first():
    jobs = campaign.plan(Profile.load(REPO / "config/gpu.yaml"), results_root="/nowhere", logs_root="/nowhere")
    names = [j.name for j in jobs]
    assert names[:5] == [f"fashionmnist/alg1_eps2_seed{s}" for s in range(5)]
    assert names[5:10] == [f"mnist/alg1_eps1_seed{s}" for s in range(5)]
    assert set(names[10:12]) == {"mnist/alg1_epsinf_seed0", "fashionmnist/alg1_epsinf_seed0"}
    assert names[12] == "fashionmnist/dpsgd_eps2_seed0"
    assert {j.run.seed for j in jobs[13:22]} == {0} and len(jobs) == 70 == len(set(names))
    first = jobs[0].args
    assert first[first.index("--width") + 1] == "1.0" and first[first.index("--device") + 1] == "cuda"
    assert [jobs[i].run.seed for i in range(13, 70)] == sorted(jobs[i].run.seed for i in range(13, 70))


def test_cpu_campaign_runs_are_dag_jobs_in_the_issue_order(tmp_path):
    prof = Profile.load(REPO / "config/cpu.yaml")
    jobs = campaign.plan(prof, results_root="/nowhere", logs_root="/nowhere")
    # issue 31's bf16 validation (MNIST eps = 1 at 0.25x, seeds 0-2, one thread each), then the full-width bf16 runs
    # (one thread each: one run per core), FashionMNIST eps = 2 first, then MNIST eps = 1, eps = inf, then seed 0 of
    # the cells never run (eps = 0.5 and 4), then MNIST eps = 2 and FashionMNIST eps = 1
    names = [j.name for j in jobs]
    assert names[:5] == ["mnist/alg1_bf16_eps1_seed0", "mnist/alg1_bf16_eps1_seed1", "mnist/alg1_bf16_eps1_seed2",
                         "fashionmnist/alg1_w1_bf16_eps2_seed0", "fashionmnist/alg1_w1_bf16_eps2_seed1"]
    assert names[9:17] == [
        "fashionmnist/alg1_w1_bf16_epsinf_seed0", "mnist/alg1_w1_bf16_epsinf_seed0", "mnist/alg1_w1_bf16_eps0.5_seed0",
        "mnist/alg1_w1_bf16_eps4_seed0", "fashionmnist/alg1_w1_bf16_eps0.5_seed0", "fashionmnist/alg1_w1_bf16_eps4_seed0",
        "mnist/alg1_w1_bf16_eps2_seed0", "fashionmnist/alg1_w1_bf16_eps1_seed0"]
    full_width = [n for n in names if "_w1_bf16_" in n]
    assert len(full_width) == 2 * (4 * 5 + 3)  # Tables 2 and 4: eps 0.5, 1, 2, 4 at five seeds, inf at three
    val, full = jobs[0].args, jobs[3].args
    assert "--bf16" in val and "--channels-last" in val and val[val.index("--threads") + 1] == "1"
    assert val[val.index("--width") + 1] == "0.25" and jobs[0].slots == 1
    assert "--bf16" in full and float(full[full.index("--width") + 1]) == 1 and full[full.index("--threads") + 1] == "1"
    # the fp32 runs keep their paths and flags: issue 14's in its order, the GroupNorm run before the 5-hour
    # width-0.5 eps = inf run, so that the BatchNorm audit gets its comparison model first
    first = names.index("fashionmnist/alg1_w0.5_eps2_seed0")
    assert names[first:first + 7] == [
        "fashionmnist/alg1_w0.5_eps2_seed0", "fashionmnist/alg1_eps2_seed1", "fashionmnist/alg1_eps2_seed2",
        "mnist/alg1_eps1_seed1", "mnist/alg1_eps1_seed2", "mnist/alg1_gn_eps1_seed0",
        "fashionmnist/alg1_w0.5_epsinf_seed0"]
    assert all("--bf16" not in j.args for j in jobs if "bf16" not in j.name)
    jobs = jobs[first:]
    torch.save({"state": {"step": 200}}, tmp_path / "x.ckpt.pt")  # a checkpoint of a paper-T run: T = 9,600
    line = campaign.describe(campaign.Job(jobs[0].run, tmp_path / "x", tmp_path / "x.log", jobs[0].args))
    assert line.endswith("stopped    checkpoint at step 200 of 9600"), line
    gn = jobs[5].args
    assert gn[gn.index("--norm") + 1] == "group" and gn[gn.index("--width") + 1] == "0.25"
    wide = jobs[0].args
    assert wide[wide.index("--width") + 1] == "0.5" and wide[wide.index("--threads") + 1] == "1"
    assert jobs[1].args[jobs[1].args.index("--width") + 1] == "0.25"
    # the extra runs belong to the tables' objects (the DAG makes and reads the same files)
    assert "results/runs/cpu/fashionmnist/alg1_w0.5_eps2_seed0.json" in prof.all_runs()
    with pytest.raises(ValueError, match="extra run"):
        Profile.from_config({"profile": "x", "objects": ["table2_mnist"],
                             "grids": {"table2_mnist": {"eps": [1], "extra": [{"eps": 1, "sede": [1]}]}}}).all_runs()
    with pytest.raises(ValueError, match="precision: fp32|bf16"):
        Profile.from_config({"profile": "x", "objects": ["table2_mnist"],
                             "grids": {"table2_mnist": {"eps": [1], "extra": [{"eps": 1, "precision": "fp16"}]}}}).all_runs()


def _env(tiny_root):
    return dict(os.environ, DIRDP_DATA=str(tiny_root), OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))


def test_smoke_campaign_trains_k_at_a_time_packs_and_unpacks(tiny_root, tmp_path):
    work, pack_dir, repo = tmp_path / "work", tmp_path / "pack", tmp_path / "repo"
    done = subprocess.run([sys.executable, "-m", "dirdp", "campaign", "run", "--smoke", "--max-runs", "3",
                           "--workdir", str(work), "--pack", str(pack_dir)], cwd=REPO, env=_env(tiny_root),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    # a smoke campaign is the profile "gpu-smoke": its 4-step runs never sit at a real run's path
    assert not (work / "results/runs/gpu").exists()
    runs = sorted((work / "results/runs/gpu-smoke/fashionmnist").glob("*.json"))
    assert [p.name for p in runs] == [f"alg1_eps2_seed{s}.json" for s in range(3)]
    (summary_path,) = (work / "results/campaign/gpu-smoke").glob("*/summary.json")
    summary = json.loads(summary_path.read_text())
    assert summary["k"] == 2 and [r["status"] for r in summary["runs"]] == ["finished"] * 3
    assert summary["fit"] and summary["started"] == summary["finished"] == 3 and "fit: 3 run(s)" in summary["k_reason"]
    assert all(r["step"] == 4 and r["steps_this_call"] == 4 for r in summary["runs"])
    assert summary["tests"]["returncode"] == 5 or "skipped" in summary["tests"]["last_line"]  # no CUDA here
    assert summary["tests"]["ran"] is True and summary["tests"]["runner"] == "pytest"  # the summary says which ran
    assert summary["checkpoints_not_carried"] == [] and "runs started 3, finished 3" in done.stdout
    bench = json.loads((summary_path.parent / "bench.json").read_text())
    assert bench["rows"][0]["algorithm1_s"] > 0 and bench["rows"][0]["model"] == "inception"
    assert {"table1_cell_s", "profile_serial_s"} <= set(bench["projection"]) and len(bench["projections"]) == 3
    # two at a time: the second run started before the first ended
    assert "(2 running, 1 queued)" in done.stdout
    # the record keeps each run's log gzipped (the committed records stay small, inside the size cap), whole
    kept = sorted((summary_path.parent / "logs/fashionmnist").iterdir())
    assert [p.name for p in kept] == [f"alg1_eps2_seed{s}.log.gz" for s in range(3)]
    for p in kept:
        live = work / "results/logs/runs/gpu-smoke/fashionmnist" / p.name.removesuffix(".gz")
        assert gzip.decompress(p.read_bytes()) == live.read_bytes() and b"alg1" in live.read_bytes()
    parts = sorted(pack_dir.iterdir())
    assert 1 <= len(parts) <= 4 and all(p.stat().st_size <= 15.5 * 2**20 for p in parts)
    repo.mkdir()
    with pytest.raises(ValueError, match="a smoke pack"):  # the trap: 4-step runs counted as finished results
        campaign.unpack(pack_dir, root=repo)
    assert not list(repo.rglob("*"))
    refused = subprocess.run([sys.executable, "-m", "dirdp", "campaign", "unpack", str(pack_dir), "--into", str(repo)],
                             cwd=REPO, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "a smoke pack" in refused.stderr and "--allow-smoke" in refused.stderr
    written = campaign.unpack(pack_dir, root=repo, allow_smoke=True)
    for p in runs:
        rel = p.relative_to(work)
        assert str(rel) in written and (repo / rel).read_bytes() == p.read_bytes()
    assert any(w.endswith("summary.json") for w in written) and any("/logs/" in w for w in written)
    assert any(w.endswith(".model.pt") for w in written)


def test_budget_cut_leaves_a_checkpoint_and_the_next_campaign_run_resumes(tiny_root, tmp_path):
    never = 10_000_000  # a run the budget must cut (eps = inf: no privacy floor for so many steps)
    prof = Profile.from_config({"profile": "gpu", "objects": ["table4_fashionmnist"], "grids": {
        "table4_fashionmnist": {"eps": ["inf"], "baselines": {}}}, "training": dict(
            campaign.SMOKE_TRAINING, seeds=1, steps=never, checkpoint_every=never, eval_every=never)})
    root, logs = tmp_path / "runs", tmp_path / "logs"
    steps = []
    for call in range(2):
        (job,) = campaign.plan(prof, results_root=root, logs_root=logs, max_runs=1)
        assert job.status == "queued"
        campaign.run_queue([job], k=1, deadline=time.monotonic() + 20, env=_env(tiny_root), say=lambda m: None)
        assert job.status == "interrupted" and job.returncode == campaign.EXIT_INTERRUPTED
        assert not job.out.exists() and job.ckpt.exists()
        steps.append(torch.load(job.ckpt, weights_only=False)["state"]["step"])
    log = job.log.read_text()
    assert steps[0] > 0 and steps[1] > steps[0]
    assert f"resumed from step {steps[0]} of 10000000" in log and log.count("interrupted at step") == 2


def test_redo_dirty_trains_a_result_of_uncommitted_code_again_and_replaces_it(tiny_root, tmp_path):
    """``campaign: redo_dirty`` queues a finished run whose provenance says "+dirty"; the old result stays until the
    new lands at its path, status says both, and the runner says what it replaced (here: the same weights, since a
    run is deterministic on CPU). Without the key, or for a clean result, the run is done."""
    cfg = {"profile": "gpu", "objects": ["table4_fashionmnist"], "grids": {
        "table4_fashionmnist": {"eps": ["inf"], "baselines": {}}}, "training": dict(campaign.SMOKE_TRAINING, seeds=1)}
    root, logs = tmp_path / "runs", tmp_path / "logs"
    (job,) = campaign.plan(Profile.from_config(cfg), results_root=root, logs_root=logs)
    campaign.run_queue([job], k=1, env=_env(tiny_root), say=lambda m: None)
    first = json.loads(job.out.read_text())
    assert job.status == "finished"
    dirty = dict(first, test_accuracy=12.34, provenance=dict(first["provenance"], git_commit="0" * 40 + "+dirty"))
    job.out.write_text(json.dumps(dirty))
    (plain,) = campaign.plan(Profile.from_config(cfg), results_root=root, logs_root=logs)
    assert plain.status == "done" and plain.replaces is None  # without redo_dirty a result is a result
    redo_cfg = dict(cfg, campaign={"redo_dirty": True})
    (redo,) = campaign.plan(Profile.from_config(redo_cfg), results_root=root, logs_root=logs)
    assert redo.status == "queued" and redo.args[-1] == "--force" and redo.replaces == dict(git_commit="0" * 40 + "+dirty", test_accuracy=12.34,
                                                            params_sha256=first["params_sha256"])
    line = campaign.describe(redo)
    assert "finished   test acc.  12.34" in line and "made by uncommitted code, trained again: queued" in line
    said = []
    campaign.run_queue([redo], k=1, env=_env(tiny_root), say=said.append)
    again = json.loads(redo.out.read_text())
    assert redo.status == "finished" and again["test_accuracy"] == first["test_accuracy"] != 12.34
    assert again["params_sha256"] == first["params_sha256"] and not redo.ckpt.exists()
    assert any(f"replaces the result of uncommitted code {'0' * 12}+dirty (test acc. 12.34): the same weights" in m
               for m in said), said
    assert campaign._record(redo)["replaces"]["test_accuracy"] == 12.34
    (after,) = campaign.plan(Profile.from_config(redo_cfg), results_root=root, logs_root=logs)
    clean = "+dirty" not in again["provenance"]["git_commit"]  # a clean checkout (CI): the redone result is done
    assert (after.status, after.replaces is None) == (("done", True) if clean else ("queued", False))


def test_a_run_with_more_threads_takes_as_many_slots_and_the_queue_keeps_its_order(tiny_root, tmp_path):
    """``training: threads_by_width`` gives a wider run more torch threads; in the campaign it takes that many of
    the K slots: with K = 2 the two-thread run starts only when it is alone and the run queued after it waits for it
    (no job jumps the queue). Each result records its sessions' threads."""
    cfg = {"profile": "gpu", "objects": ["table4_fashionmnist"], "grids": {"table4_fashionmnist": {
        "eps": ["inf"], "baselines": {}, "extra": [{"eps": "inf", "width": 0.125}]}},
        "training": dict(campaign.SMOKE_TRAINING, seeds=2, threads_by_width=[{"width": 0.125, "threads": 2}])}
    prof = Profile.from_config(cfg)
    jobs = campaign.plan(prof, results_root=tmp_path / "runs", logs_root=tmp_path / "logs")
    assert [(j.name, j.slots) for j in jobs] == [("fashionmnist/alg1_epsinf_seed0", 1),
                                                 ("fashionmnist/alg1_w0.125_epsinf_seed0", 2),
                                                 ("fashionmnist/alg1_epsinf_seed1", 1)]
    assert jobs[1].args[jobs[1].args.index("--threads") + 1] == "2" and "(2 threads)" in campaign.describe(jobs[1])
    said = []
    campaign.run_queue(jobs, k=2, env=_env(tiny_root), say=said.append, poll_s=0.05)
    events = [m.split()[0] + " " + m.split()[1].rstrip(":") for m in said if m.split()[0] in ("started", "finished")]
    a, wide, b = (j.name for j in jobs)
    assert events == [f"started {a}", f"finished {a}", f"started {wide}", f"finished {wide}", f"started {b}",
                      f"finished {b}"], said
    assert any(m.startswith(f"started   {wide} (1 running, 1 queued, 2 threads)") for m in said), said
    threads = [[s["torch_threads"] for s in json.loads(j.out.read_text())["provenance"]["sessions"]] for j in jobs]
    assert threads == [[1], [2], [1]]
    from workflow import profile_schema

    overlay = {"training": {"threads_by_width": [{"width": 1}]}}  # a width without its threads
    assert profile_schema.errors(overlay, partial=True) == ["training.threads_by_width.0: 'threads' is a required property"]


def test_a_run_someone_else_is_training_is_left_alone(tiny_root, tmp_path):
    from dirdp import runfile

    out = tmp_path / "runs" / "x.json"
    out.parent.mkdir(parents=True)
    holder = runfile._lock(out)
    try:
        assert runfile.is_running(out)
        with pytest.raises(ValueError, match="another process is training"):
            runfile._lock(out)
        args = [sys.executable, "-m", "dirdp", "train", "--dataset", "mnist", "--eps", "1", "--steps", "2",
                "--width", "0.0625", "--out", str(out)]
        done = subprocess.run(args, cwd=REPO, env=_env(tiny_root), capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and "another process is training" in done.stderr and "Traceback" not in done.stderr
    finally:
        holder.close()
    assert not runfile.is_running(out)


def test_pack_leaves_out_what_does_not_fit_and_says_so(tmp_path):
    root = tmp_path
    small, big = root / "results/a.json", root / "results/b.model.pt"
    small.parent.mkdir(parents=True)
    small.write_text("{}")
    big.write_bytes(os.urandom(300_000))
    packed = campaign.pack([(small, "result"), (big, "model weights")], root / "out", root=root, part_mib=0.1,
                           max_parts=2)
    assert packed["files"] == 1 and [x["path"] for x in packed["left_out"]] == ["results/b.model.pt"]
    assert len(packed["parts"]) == 1
    dest = tmp_path / "dest"
    dest.mkdir()
    assert campaign.unpack(root / "out", root=dest) == ["results/a.json"]


def test_unpack_refuses_files_outside_results(tmp_path):
    evil = tmp_path / "evil"
    evil.mkdir()
    with tarfile.open(evil / "campaign.tar.gz.00", "w:gz") as tar:
        payload = tmp_path / "p"
        payload.write_text("x")
        tar.add(payload, arcname="results/../dirdp/__init__.py")
    with pytest.raises(ValueError, match="refusing"):
        campaign.unpack(evil, root=tmp_path / "repo")
    with pytest.raises(ValueError, match="no campaign.tar.gz.00"):
        campaign.unpack(tmp_path / "nothing", root=tmp_path)


def test_campaign_cli_errors_are_clear(tmp_path):
    for args, match in [(["run", "--config", "config/nope.yaml", "--smoke"], "no profile"),
                        (["run", "--k", "0", "--smoke"], "--k must be at least 1"),
                        (["run", "--pack-parts", "0", "--smoke"], "--pack-parts must be at least 1"),
                        (["run", "--pack-part-mib", "0.5", "--smoke"], "--pack-part-mib must be a number of MiB"),
                        (["unpack", str(tmp_path)], "no campaign.tar.gz.00")]:
        done = subprocess.run([sys.executable, "-m", "dirdp", "campaign", *args], cwd=REPO, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2 and match in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_the_gpu_campaign_without_a_gpu_says_so():
    done = subprocess.run([sys.executable, "-m", "dirdp", "campaign", "run", "--no-tests", "--no-bench"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no CUDA device" in done.stderr and "--smoke" in done.stderr


def test_a_held_queue_starts_nothing_and_says_why(tmp_path):
    prof = campaign.load_profile(REPO / "config/cpu.yaml", smoke=True)
    jobs = campaign.plan(prof, results_root=tmp_path / "runs", logs_root=tmp_path / "logs", max_runs=2)
    said = []
    campaign.run_queue(jobs, k=2, deadline=time.monotonic() + 1.5, say=said.append, poll_s=0.1,
                       hold=lambda: "uncommitted code changes")
    assert [j.status for j in jobs] == ["queued", "queued"] and not list(tmp_path.glob("logs/**/*.log"))
    assert said == ["holding the next start: uncommitted code changes"]


def test_the_queue_fitted_to_the_budget_starts_only_the_runs_that_can_finish():
    """The queue fitted to the budget (fit_runs): from the benchmark's seconds per step, the runs started (in queue
    order) must finish in the time left, however fast or slow the GPU; K is how many were chosen, at most the memory's
    bound."""
    prof = Profile.load(REPO / "config/gpu.yaml")
    jobs = campaign.plan(prof, results_root="/nowhere", logs_root="/nowhere")

    def rows(alg1_s):
        return [dict(model="inception", width=1.0, precision="fp32", batch=250, nonprivate_s=alg1_s / 2,
                     algorithm1_s=alg1_s, dpsgd_s=alg1_s * 5)]

    # 9,600 steps at 10 ms: 96 s of steps, x 1.3 + 30 s = 154.8 s a run: two fit in 400 s
    chosen, k, why = campaign.fit_runs(jobs, rows(0.01), prof, seconds=400, k_max=8)
    assert [j.name for j in chosen] == ["fashionmnist/alg1_eps2_seed0", "fashionmnist/alg1_eps2_seed1"] and k == 2
    assert "fit: 2 run(s)" in why
    assert campaign.fit_runs(jobs, rows(0.001), prof, seconds=400, k_max=3)[1] == 3  # fast: the memory bound
    slow, k, why = campaign.fit_runs(jobs, rows(0.1), prof, seconds=400, k_max=8)  # 1,278 s a run
    assert slow == [] and k == 1 and "no run can finish" in why and "1278 s" in why
    assert campaign.fit_runs(jobs, None, prof, seconds=400, k_max=8)[0] == []  # no benchmark: nothing starts


def test_a_checkpoint_is_packed_only_if_the_next_bundle_can_take_it(tmp_path):
    prof = Profile.load(REPO / "config/gpu.yaml")
    jobs = campaign.plan(prof, results_root=tmp_path / "runs", logs_root=tmp_path / "logs", max_runs=2)
    for j in jobs:
        j.ckpt.parent.mkdir(parents=True, exist_ok=True)
        j.ckpt.write_bytes(b"x" * 1000)
    cdir = tmp_path / "c"
    cdir.mkdir()
    labels = lambda room: [label for _, label in campaign.pack_list(jobs, cdir, ckpt_room=room)]  # noqa: E731
    assert labels(None).count("checkpoint") == 2 and labels(1500).count("checkpoint") == 1
    assert labels(500).count("checkpoint") == 0


def test_the_pack_bounds_reach_the_campaign(monkeypatch):
    """--pack-parts and --pack-part-mib (the bound on what comes back from a GPU node) go to run_campaign; without
    them the pack is at most 4 files of 15.5 MiB."""
    from workflow.__main__ import main

    seen = []
    monkeypatch.setattr(campaign, "run_campaign", lambda *a, **kw: seen.append(kw) or dict(runs=[]))
    assert main(["campaign", "run", "--smoke", "--pack", "out", "--pack-parts", "2", "--pack-part-mib", "3.5"]) == 0
    assert main(["campaign", "run", "--smoke"]) == 0
    assert [(kw["pack_parts"], kw["pack_part_mib"]) for kw in seen] == [(2, 3.5), (4, 15.5)]
