"""The campaign (workflow.campaign): a profile's runs in its priority order, trained by Snakemake K at a time, cut off
at the budget with a checkpoint and resumed by the next campaign; pack and unpack. The GPU campaign's --smoke mode is
the same code on CPU with 4-step runs; scripts/campaign.sh start, stop and start again on a tiny profile."""

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import torch

from workflow.campaign import fit, packing, plan, run
from workflow.experiments import Profile

REPO = Path(__file__).resolve().parents[1]
# a run a budget must cut: eps = inf (no privacy floor for so many steps), no checkpoint but the one SIGTERM writes
LONG = """profile: smoke-long
extends: smoke
training: {steps: 10000000, checkpoint_every: 10000000, eval_every: 10000000}
grids:
  table2_mnist: {eps: [inf]}
campaign:
  queue: [{method: alg1}]
"""


def test_gpu_plan_puts_the_open_questions_first():
    jobs = plan.plan(Profile.load(REPO / "config/gpu.yaml"), results_root="/nowhere", logs_root="/nowhere")
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
    jobs = plan.plan(prof, results_root="/nowhere", logs_root="/nowhere")
    # issue 31's bf16 validation (MNIST eps = 1 at 0.25x, seeds 0-2, one thread each), then the full-width bf16 runs
    # (one thread each: one run per core), FashionMNIST eps = 2 first, then MNIST eps = 1, eps = inf, MNIST eps = 0.5
    # and 4 (landed); then issue 58's order: seed 0 of the cells never run (FashionMNIST 0.5 and 1, the widest paper
    # spreads, MNIST 2, FashionMNIST 4), the one-run audit's runs (the tanh CNN pair, then the paper's model), seeds
    # 1-2 of the private cells (FashionMNIST 0.5 and 1 first), eps = inf seeds 1-2, then DP-SGD at 0.25x
    names = [j.name for j in jobs]
    assert names[:5] == ["mnist/alg1_bf16_eps1_seed0", "mnist/alg1_bf16_eps1_seed1", "mnist/alg1_bf16_eps1_seed2",
                         "fashionmnist/alg1_w1_bf16_eps2_seed0", "fashionmnist/alg1_w1_bf16_eps2_seed1"]
    assert names[9:22] == [
        "fashionmnist/alg1_w1_bf16_epsinf_seed0", "mnist/alg1_w1_bf16_epsinf_seed0", "mnist/alg1_w1_bf16_eps0.5_seed0",
        "mnist/alg1_w1_bf16_eps4_seed0", "fashionmnist/alg1_w1_bf16_eps0.5_seed0", "fashionmnist/alg1_w1_bf16_eps1_seed0",
        "mnist/alg1_w1_bf16_eps2_seed0", "fashionmnist/alg1_w1_bf16_eps4_seed0", "mnist/tempered_c1000_eps1_seed0",
        "mnist/alg1_papernot_cnn_w1_c1000_eps1_seed0", "mnist/alg1_w1_bf16_c1000_eps1_seed0",
        "fashionmnist/alg1_w1_bf16_eps0.5_seed1", "fashionmnist/alg1_w1_bf16_eps0.5_seed2"]
    after = names[names.index("fashionmnist/alg1_w1_bf16_eps4_seed2") + 1:]
    assert after[:4] == [f"{d}/alg1_w1_bf16_epsinf_seed{s}" for d in ("mnist", "fashionmnist") for s in (1, 2)]
    assert after[4:7] == [f"fashionmnist/dpsgd_eps{e}_seed0" for e in ("0.5", "1", "4")]
    full_width = [n for n in names if "_w1_bf16_" in n and "_c1000_" not in n]
    assert len(full_width) == 2 * (4 * 5 + 3)  # Tables 2 and 4: eps 0.5, 1, 2, 4 at five seeds, inf at three
    val, full = jobs[0].args, jobs[3].args
    assert "--bf16" in val and "--channels-last" in val and val[val.index("--threads") + 1] == "1"
    assert val[val.index("--width") + 1] == "0.25" and jobs[0].threads == 1
    # a full-width run: the threads the profile's layout gives width 1 (one run per core, or one run on both)
    layout = {float(e["width"]): e["threads"] for e in prof.training["threads_by_width"]}
    assert "--bf16" in full and float(full[full.index("--width") + 1]) == 1
    assert full[full.index("--threads") + 1] == str(layout[1.0]) == str(jobs[3].threads)
    # the fp32 runs keep their paths and flags: issue 14's in its order, the GroupNorm run before the 5-hour
    # width-0.5 eps = inf run, so that the BatchNorm audit gets its comparison model first
    first = names.index("fashionmnist/alg1_w0.5_eps2_seed0")
    assert names[first:first + 7] == [
        "fashionmnist/alg1_w0.5_eps2_seed0", "fashionmnist/alg1_eps2_seed1", "fashionmnist/alg1_eps2_seed2",
        "mnist/alg1_eps1_seed1", "mnist/alg1_eps1_seed2", "mnist/alg1_gn_eps1_seed0",
        "fashionmnist/alg1_w0.5_epsinf_seed0"]
    assert all("--bf16" not in j.args for j in jobs if "bf16" not in j.name)
    jobs = jobs[first:]
    out = tmp_path / "x.json"
    torch.save({"state": {"step": 200}}, tmp_path / "x.json.ckpt.pt")  # a checkpoint of a paper-T run: T = 9,600
    line = plan.describe(plan.Job(jobs[0].run, out, tmp_path / "x.log", jobs[0].args))
    assert line.endswith("stopped    checkpoint at step 200 of 9600"), line
    gn = jobs[5].args
    assert gn[gn.index("--norm") + 1] == "group" and gn[gn.index("--width") + 1] == "0.25"
    wide = jobs[0].args
    assert wide[wide.index("--width") + 1] == "0.5" and wide[wide.index("--threads") + 1] == "1"
    assert jobs[1].args[jobs[1].args.index("--width") + 1] == "0.25"
    # the extra runs belong to the tables' objects (the DAG makes and reads the same files)
    assert "results/runs/cpu/fashionmnist/alg1_w0.5_eps2_seed0.json" in prof.all_runs()
    for extra, says in [({"eps": 1, "sede": [1]}, "grids.table2_mnist.extra.0: unknown key 'sede' (did you mean "
                                                   "'seeds'?); allowed: eps, seeds, width, norm, precision"),
                        ({"eps": 1, "precision": "fp16"},
                         "grids.table2_mnist.extra.0.precision: 'fp16' is not one of ['fp32', 'bf16']")]:
        with pytest.raises(ValueError) as err:
            Profile.from_config({"profile": "x", "objects": ["table2_mnist"],
                                 "grids": {"table2_mnist": {"eps": [1], "extra": [extra]}}})
        assert str(err.value) == f"profile 'x': {says}"


@pytest.mark.slow
def test_each_train_job_of_the_dag_has_its_place_in_the_profiles_order_as_priority(mirror_root):
    """The one order: Snakemake starts the train jobs by priority, and each job's priority is its run's place in the
    profile's campaign order, so that the DAG and a campaign train in the order the profile declares."""
    jobs = [j for j in plan.plan(Profile.load(REPO / "config/cpu.yaml"), results_root=REPO / "results/runs")
            if j.status == "queued"]
    queued = [str(j.out.relative_to(REPO)) for j in jobs]
    assert len(queued) > 10
    done = subprocess.run([sys.executable, "-m", "snakemake", *queued[::-1], "-n", "--configfile",
                           "config/cpu.yaml"],
                          cwd=REPO, env=dict(os.environ, DIRDP_DATA=str(mirror_root), PYTHONPATH=str(REPO)),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    scheduled = re.findall(r"rule train:\n(?:    .*\n)*?    output: (\S+)\n(?:    .*\n)*?    priority: (\d+)",
                           done.stdout)
    by_priority = [out for out, _ in sorted(scheduled, key=lambda j: -int(j[1]))]
    assert by_priority == queued  # the targets given in reverse: the order is the priorities', not the command's


def _env(tiny_root):
    return dict(os.environ, DIRDP_DATA=str(tiny_root), OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))


@pytest.mark.slow
def test_smoke_campaign_trains_through_snakemake_k_at_a_time_packs_and_unpacks(tiny_root, tmp_path):
    work, pack_dir, repo = tmp_path / "work", tmp_path / "pack", tmp_path / "repo"
    done = subprocess.run([sys.executable, "-m", "workflow", "campaign", "run", "--smoke", "--max-runs", "3",
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
    # Snakemake trained them: the runs as targets, in the plan's order, two cores; it started them by priority
    train = summary["train"]
    assert train["scheduler"] == "snakemake" and train["returncode"] == 0 and not train["stopped"]
    cmd = train["command"]
    assert cmd[cmd.index("--cores") + 1] == "2" and "--keep-going" in cmd
    assert cmd[3:6] == [f"results/runs/gpu-smoke/fashionmnist/alg1_eps2_seed{s}.json" for s in range(3)]
    said = (summary_path.parent / "snakemake.log").read_text()
    started = [int(p) for p in re.findall(r"rule train:\n(?:    .*\n)*?    priority: (\d+)", said)]
    # the two it starts at once (in either order) are the two first of the plan, then the third
    assert len(started) == 3 and sorted(started[:2]) == sorted(started)[1:] and started[2] == min(started), said
    # the record keeps each run's log gzipped (the committed records stay small, inside the size cap), whole
    import gzip

    kept = sorted((summary_path.parent / "logs/fashionmnist").iterdir())
    assert [p.name for p in kept] == [f"alg1_eps2_seed{s}.log.gz" for s in range(3)]
    for p in kept:
        live = work / "results/logs/runs/gpu-smoke/fashionmnist" / p.name.removesuffix(".gz")
        assert gzip.decompress(p.read_bytes()) == live.read_bytes() and b"alg1" in live.read_bytes()
    parts = sorted(pack_dir.iterdir())
    assert 1 <= len(parts) <= 4 and all(p.stat().st_size <= 15.5 * 2**20 for p in parts)
    repo.mkdir()
    with pytest.raises(ValueError, match="a smoke pack"):  # the trap: 4-step runs counted as finished results
        packing.unpack(pack_dir, root=repo)
    assert not list(repo.rglob("*"))
    refused = subprocess.run([sys.executable, "-m", "workflow", "campaign", "unpack", str(pack_dir), "--into",
                              str(repo)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "a smoke pack" in refused.stderr and "--allow-smoke" in refused.stderr
    written = packing.unpack(pack_dir, root=repo, allow_smoke=True)
    for p in runs:
        rel = p.relative_to(work)
        assert str(rel) in written and (repo / rel).read_bytes() == p.read_bytes()
    assert any(w.endswith("summary.json") for w in written) and any("/logs/" in w for w in written)
    assert any(w.endswith(".model.pt") for w in written)


@pytest.mark.slow
def test_the_budget_stops_each_run_with_its_checkpoint_and_the_next_campaign_resumes_it(tiny_root, tmp_path,
                                                                                         monkeypatch):
    (tmp_path / "long.yaml").write_text(LONG)
    for key, value in _env(tiny_root).items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "results/runs/smoke-long/mnist/alg1_epsinf_seed0.json"
    steps = []
    for _ in range(2):
        summary = run.run_campaign(tmp_path / "long.yaml", budget_s=35, k=1, tests=False, bench=False,
                                   workdir=tmp_path, max_runs=1, say=lambda m: None)
        assert summary["train"]["stopped"] and [r["status"] for r in summary["runs"]] == ["stopped"]
        assert not out.exists() and plan.checkpoint_step(out) == summary["runs"][0]["step"]
        steps.append(summary["runs"][0]["step"])
    log = (tmp_path / "results/logs/runs/smoke-long/mnist/alg1_epsinf_seed0.log").read_text()
    assert 0 < steps[0] < steps[1] and summary["runs"][0]["resumed_from"] == steps[0]
    assert f"resumed from step {steps[0]} of 10000000" in log and "interrupted at step" in log
    assert not out.with_name(out.name + ".lock").exists()  # each run let go of its lock


def _sandbox(work: Path, tiny_root: Path) -> dict:
    """A repository of its own holding the workflow and scripts/campaign.sh, with a stand-in .venv whose python runs
    this interpreter; the environment that runs it."""
    work.mkdir()
    for name in ("Snakefile", "rules", "config", "dirdp", "workflow", "profiles", "report", "scripts",
                 "environment.yml", ".gitignore"):
        src = REPO / name
        (shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("__pycache__")) if src.is_dir()
         else shutil.copy2(src, work / name))
    (work / "config/long.yaml").write_text(LONG)
    (work / ".venv/bin").mkdir(parents=True)
    python = work / ".venv/bin/python"  # a wrapper: a symlink would lose the venv's packages
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], cwd=work, check=True)
    subprocess.run([*git, "add", "-A"], cwd=work, check=True)
    subprocess.run([*git, "commit", "-qm", "sandbox"], cwd=work, check=True)
    env = dict(os.environ, DIRDP_DATA=str(tiny_root), OMP_NUM_THREADS="1", CONFIG="config/long.yaml", K="1")
    env.pop("PYTHONPATH", None)
    return env


def _training(log: Path) -> bool:
    """Whether a run's log shows its progress bar: the run is in its training loop (the bar's first line is written
    when the loop starts; later lines only every 30 s in a log, dirdp.loop)."""
    return log.exists() and re.search(r"\| *\d+/10000000", log.read_text(errors="replace")) is not None


@pytest.mark.slow
def test_campaign_sh_start_stop_and_start_again_resumes_the_run_from_its_checkpoint(tiny_root, tmp_path):
    """scripts/campaign.sh on a tiny profile: start trains in the background through Snakemake, stop makes the run
    write its checkpoint and waits for it, and the next start resumes it from there."""
    work = tmp_path / "repo"
    env = _sandbox(work, tiny_root)
    out = work / "results/runs/smoke-long/mnist/alg1_epsinf_seed0.json"
    log = work / "results/logs/runs/smoke-long/mnist/alg1_epsinf_seed0.log"

    def sh(action: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "scripts/campaign.sh", action], cwd=work, env=env, capture_output=True,
                              text=True, timeout=300)

    steps = []
    for attempt in range(2):
        log.unlink(missing_ok=True)  # the job writes its log anew: wait for this attempt's
        started = sh("start")
        assert started.returncode == 0 and "campaign: runner" in started.stdout, started.stdout + started.stderr
        end = time.monotonic() + 180
        while not _training(log):
            assert time.monotonic() < end, (log.read_text() if log.exists() else "no log")
            time.sleep(0.2)
        time.sleep(2)  # some steps past the last checkpoint (asserted below)
        stopped = sh("stop")
        assert stopped.returncode == 0 and "stopped    checkpoint at step" in stopped.stdout, stopped.stdout
        assert "runner: not running" in sh("status").stdout
        steps.append(plan.checkpoint_step(out))
        assert not out.exists() and steps[-1] and "interrupted at step" in log.read_text()
    assert steps[0] < steps[1] and f"resumed from step {steps[0]} of 10000000" in log.read_text()
    assert not out.with_name(out.name + ".lock").exists()


@pytest.mark.slow
def test_a_run_with_more_threads_gets_them_from_snakemake(tiny_root, tmp_path, monkeypatch):
    """``training: threads_by_width`` gives a wider run more torch threads: its train job asks Snakemake for them, so
    with K = 2 cores it runs alone; each result records its sessions' threads."""
    for key, value in _env(tiny_root).items():
        monkeypatch.setenv(key, value)
    cfg = tmp_path / "p.yaml"
    cfg.write_text("profile: smoke-threads\nextends: smoke\ngrids:\n  table2_mnist: {eps: [inf], baselines: {},"
                   " extra: [{eps: inf, width: 0.25}]}\ntraining: {seeds: 2, threads_by_width: [{width: 0.25, threads: 2}]}\n"
                   "campaign: {queue: [{method: alg1}]}\n")
    jobs = [j for j in plan.plan(plan.load_profile(cfg), results_root=tmp_path / "results/runs")
            if j.run.method == "alg1" and not j.run.canaries]  # the smoke profile's one-run audit run comes last
    assert [(j.name, j.threads) for j in jobs] == [("mnist/alg1_epsinf_seed0", 1), ("mnist/alg1_epsinf_seed1", 1),
                                                   ("mnist/alg1_w0.25_epsinf_seed0", 2)]
    assert "(2 threads)" in plan.describe(jobs[2])
    summary = run.run_campaign(cfg, k=2, budget_s=0, tests=False, bench=False, workdir=tmp_path, max_runs=3,
                               say=lambda m: None)
    assert [r["status"] for r in summary["runs"]] == ["finished"] * 3
    threads = [[s["torch_threads"] for s in json.loads(j.out.read_text())["provenance"]["sessions"]] for j in jobs]
    assert threads == [[1], [1], [2]]
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
    packed = packing.pack([(small, "result"), (big, "model weights")], root / "out", root=root, part_mib=0.1,
                          max_parts=2)
    assert packed["files"] == 1 and [x["path"] for x in packed["left_out"]] == ["results/b.model.pt"]
    assert len(packed["parts"]) == 1
    dest = tmp_path / "dest"
    dest.mkdir()
    assert packing.unpack(root / "out", root=dest) == ["results/a.json"]


def test_unpack_refuses_files_outside_results(tmp_path):
    evil = tmp_path / "evil"
    evil.mkdir()
    with tarfile.open(evil / "campaign.tar.gz.00", "w:gz") as tar:
        payload = tmp_path / "p"
        payload.write_text("x")
        tar.add(payload, arcname="results/../dirdp/__init__.py")
    with pytest.raises(ValueError, match="refusing"):
        packing.unpack(evil, root=tmp_path / "repo")
    with pytest.raises(ValueError, match="no campaign.tar.gz.00"):
        packing.unpack(tmp_path / "nothing", root=tmp_path)


@pytest.mark.slow
def test_campaign_cli_errors_are_clear(tmp_path):
    for args, match in [(["run", "--config", "config/nope.yaml", "--smoke"], "no profile"),
                        (["run", "--k", "0", "--smoke"], "--k must be at least 1"),
                        (["run", "--pack-parts", "0", "--smoke"], "--pack-parts must be at least 1"),
                        (["run", "--pack-part-mib", "0.5", "--smoke"], "--pack-part-mib must be a number of MiB"),
                        (["unpack", str(tmp_path)], "no campaign.tar.gz.00")]:
        done = subprocess.run([sys.executable, "-m", "workflow", "campaign", *args], cwd=REPO, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 2 and match in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present")
def test_the_gpu_campaign_without_a_gpu_says_so():
    done = subprocess.run([sys.executable, "-m", "workflow", "campaign", "run", "--no-tests", "--no-bench"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no CUDA device" in done.stderr and "--smoke" in done.stderr


def test_require_clean_starts_nothing_while_the_code_is_uncommitted(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "dirty_code", lambda: "uncommitted code changes (...)")
    monkeypatch.setattr(run, "_train", lambda *a, **k: pytest.fail("a run started"))
    with pytest.raises(ValueError, match="--require-clean: uncommitted code changes"):
        run.run_campaign(REPO / "config/cpu.yaml", smoke=True, require_clean=True, tests=False, bench=False,
                         workdir=tmp_path, say=lambda m: None)
    assert not (tmp_path / "results").exists()


def test_the_plan_fitted_to_the_budget_starts_only_the_runs_that_can_finish():
    """The plan fitted to the budget (fit_runs): from the benchmark's seconds per step, the runs started (in the
    profile's order) must finish in the time left, however fast or slow the GPU; K is how many were chosen, at most
    the memory's bound."""
    prof = Profile.load(REPO / "config/gpu.yaml")
    jobs = plan.plan(prof, results_root="/nowhere", logs_root="/nowhere")

    def rows(alg1_s):
        return [dict(model="inception", width=1.0, precision="fp32", batch=250, nonprivate_s=alg1_s / 2,
                     algorithm1_s=alg1_s, dpsgd_s=alg1_s * 5)]

    # 9,600 steps at 10 ms: 96 s of steps, x 1.3 + 30 s = 154.8 s a run: two fit in 400 s
    chosen, k, why = fit.fit_runs(jobs, rows(0.01), prof, seconds=400, k_max=8)
    assert [j.name for j in chosen] == ["fashionmnist/alg1_eps2_seed0", "fashionmnist/alg1_eps2_seed1"] and k == 2
    assert "fit: 2 run(s)" in why
    assert fit.fit_runs(jobs, rows(0.001), prof, seconds=400, k_max=3)[1] == 3  # fast: the memory bound
    slow, k, why = fit.fit_runs(jobs, rows(0.1), prof, seconds=400, k_max=8)  # 1,278 s a run
    assert slow == [] and k == 1 and "no run can finish" in why and "1278 s" in why
    assert fit.fit_runs(jobs, None, prof, seconds=400, k_max=8)[0] == []  # no benchmark: nothing starts


def test_a_checkpoint_is_packed_only_if_the_next_bundle_can_take_it(tmp_path):
    prof = Profile.load(REPO / "config/gpu.yaml")
    jobs = plan.plan(prof, results_root=tmp_path / "runs", logs_root=tmp_path / "logs", max_runs=2)
    for j in jobs:
        j.ckpt.parent.mkdir(parents=True, exist_ok=True)
        j.ckpt.write_bytes(b"x" * 1000)
    cdir = tmp_path / "c"
    cdir.mkdir()
    labels = lambda room: [label for _, label in packing.pack_list(jobs, cdir, ckpt_room=room)]  # noqa: E731
    assert labels(None).count("checkpoint") == 2 and labels(1500).count("checkpoint") == 1
    assert labels(500).count("checkpoint") == 0


def test_the_pack_bounds_reach_the_campaign(monkeypatch):
    """--pack-parts and --pack-part-mib (the bound on what comes back from a GPU node) go to run_campaign; without
    them the pack is at most 4 files of 15.5 MiB."""
    from workflow.__main__ import main

    seen = []
    monkeypatch.setattr(run, "run_campaign", lambda *a, **kw: seen.append(kw) or dict(runs=[]))
    assert main(["campaign", "run", "--smoke", "--pack", "out", "--pack-parts", "2", "--pack-part-mib", "3.5"]) == 0
    assert main(["campaign", "run", "--smoke"]) == 0
    assert [(kw["pack_parts"], kw["pack_part_mib"]) for kw in seen] == [(2, 3.5), (4, 15.5)]


def test_snakemake_reads_the_campaigns_targets_as_targets_whatever_its_options(tmp_path):
    """The campaign's command line as Snakemake's own parser reads it: the runs are its targets, also beside the
    options that take several values (--resources on a GPU, --config for the data sets on disk)."""
    from snakemake.cli import get_argument_parser

    from workflow.campaign import train

    jobs = plan.plan(Profile.load(REPO / "config/gpu.yaml"), results_root=tmp_path / "results/runs", max_runs=3)
    cmd = train.snakemake_command(REPO / "config/gpu.yaml", jobs, k=3, gpu=True, work=tmp_path, datasets=["mnist"])
    args = get_argument_parser().parse_args(cmd[3:])
    assert args.targets == [str(j.out.relative_to(tmp_path)) for j in jobs]
    assert list(args.resources) == ["gpu"] and args.config == ["datasets=[mnist]"] and not args.force
    assert str(args.directory) == str(tmp_path) and args.nolock and args.keep_going


def test_the_campaigns_snakemake_starts_the_head_of_the_queue_first_whatever_its_threads(tmp_path):
    """With the campaign's scheduler options, on 2 cores, a two-thread job at the head of the queue starts before two
    one-thread jobs below it (Snakemake's default scheduler starts those two: their priorities sum higher)."""
    from workflow.campaign import train

    jobs = plan.plan(Profile.load(REPO / "config/gpu.yaml"), results_root=tmp_path / "results/runs", max_runs=1)
    cmd = train.snakemake_command(REPO / "config/gpu.yaml", jobs, k=2, gpu=False, work=tmp_path)
    scheduling = cmd[cmd.index("--scheduler"):cmd.index("--scheduler") + 2]
    (tmp_path / "Snakefile").write_text("\n".join(
        f"rule {name}:\n    output: '{name}.done'\n    threads: {threads}\n    priority: {priority}\n"
        f"    shell: 'echo {name} >> order.txt; sleep 1; touch {{output}}'\n"
        for name, threads, priority in (("head", 2, 10), ("second", 1, 9), ("third", 1, 8))))
    subprocess.run([sys.executable, "-m", "snakemake", "head.done", "second.done", "third.done", "--cores", "2",
                    "--quiet", *scheduling], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "order.txt").read_text().split()[0] == "head"


def test_a_running_runs_status_line_gives_the_pace_its_progress_bar_logged(tmp_path, monkeypatch):
    """campaign status: a run in progress says its log's last rate and estimate (tqdm's line, every 30 s)."""
    from workflow.campaign import plan

    log = tmp_path / "x.log"
    assert plan.pace(log) is None  # no log yet
    log.write_text("resumed from step 5821 of 9600\nalg1 mnist eps=inf w=1:  61%|      | 5821/9600 [00:00<?, ?step/s]")
    assert plan.pace(log) is None  # no rate yet
    with open(log, "a") as f:
        f.write("\ralg1 mnist eps=inf w=1:  65%|######5   | 6223/9600 [15:09<2:14:46,  2.39s/step, loss=0.0002]"
                "\ralg1 mnist eps=inf w=1:  71%|#######   | 6809/9600 [28:18<1:03:40,  1.37s/step, loss=0.0002]")
    assert plan.pace(log) == "1.37 s/step, 1:03:40 to go"
    with open(log, "a") as f:  # faster than a step a second, tqdm turns the rate round: 1.32 step/s is 0.76 s/step
        f.write("\ralg1 mnist eps=inf w=1:  72%|#######   | 6931/9600 [29:50<56:02,  1.32step/s, loss=0.0002]")
    assert plan.pace(log) == "0.76 s/step, 56:02 to go"
    prof = plan.load_profile(REPO / "config" / "cpu.yaml")
    job = [j for j in plan.plan(prof, results_root=tmp_path / "runs") if "epsinf_seed0" in j.name and "w1" in j.name][0]
    job.log = log
    monkeypatch.setattr(plan, "is_running", lambda out: True)
    assert "running    no checkpoint (0.76 s/step, 56:02 to go, its log)" in plan.describe(job)


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists(), reason="no Linux autogroups here")
def test_the_runs_session_gets_the_campaign_priority_and_a_refused_one_is_said(tmp_path):
    from workflow.campaign.train import run_until

    said = []
    cmd = ["sh", "-c", "sleep 0.5; cat /proc/self/autogroup"]
    for nice, expect in (("3", "nice 3"), ("not-a-number", "nice 0")):
        log = tmp_path / f"{nice}.log"
        code = run_until(cmd, deadline=None, env={**os.environ, "CAMPAIGN_PRIORITY": nice}, cwd=tmp_path, log=log,
                         say=said.append)
        assert code == 0 and log.read_text().strip().endswith(expect)
    assert said == ["CAMPAIGN_PRIORITY=not-a-number: the runs keep the default priority (Invalid argument)"]
