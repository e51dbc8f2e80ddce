"""profiles/slurm on a real SLURM: a single-node cluster on this machine (scripts/slurm_local.sh: munged, slurmctld,
slurmd, a gres GPU backed by /dev/null), driven by the SLURM executor plugin through the profile as it is written.

- The smoke profile's training jobs (``--until train``: all of them, the notebooks left out to keep it to minutes)
  are each submitted with sbatch, with the profile's resources (``--gres=gpu:1``, ``--mem 32000``, ``-t 720``,
  ``--cpus-per-task`` = threads, the partition from $DIRDP_SLURM_PARTITION), finish COMPLETED, and their results
  equal a local run's (``params_sha256`` of each run JSON, and the loss and accuracy curves: LATENT records no
  parameters hash).
- A training job cancelled with scancel after its first checkpoint (what a preemption or a node's time limit does)
  is resubmitted by Snakemake (the profile's ``retries``), resumes from the checkpoint, and its final parameters
  equal an uninterrupted run's.

Job states come from ``squeue --states=all`` (``--slurm-status-command squeue``): the cluster has no accounting
database (slurmdbd), so sacct answers "Slurm accounting storage is disabled"; the controller keeps a finished job
for MinJobAge = 600 s, longer than this module runs. The one command line change to the profile: ``--set-threads
train=1`` (this node has 2 CPUs; the profile's 4 threads would be 4 CPUs, and the local runs it is compared with,
``snakemake --cores 2 --until train`` in another copy, train with the smoke profile's 1 thread). A job summary goes to
tests/artifacts/test_slurm.txt.

Needs root and Debian's slurmctld, slurmd, slurm-client and munge (.ci/run installs them); skips naming what is
missing, and fails instead under CI=1. $DIRDP_SLURM_TEST_STEPS sets the length of the cancelled run (default 60
steps: long enough on an idle CPU that the cancel lands before the run ends; its checkpoint comes every 2 steps)."""

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from test_dag import SNAKEMAKE, copy_workflow
from workflow.experiments import Profile

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "slurm_local.sh"
ARTIFACTS = REPO / "tests" / "artifacts"
TOOLS = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel", "scontrol")
APT = "apt-get install --no-install-recommends slurmctld slurmd slurm-client munge"
PARTITION = "debug"  # the partition scripts/slurm_local.sh makes; the profile's own is "gpu"
# what this machine changes on the command line: the status query (no slurmdbd), a first status check after 2 s
# instead of 40 (then every 12, 22, ... s, reset when a job ends), one thread per run, SLURM logs kept as evidence
SLURM_ARGS = ("--set-threads", "train=1", "--slurm-status-command", "squeue",
              "--slurm-init-seconds-before-status-checks", "2", "--slurm-keep-successful-logs")
STEPS = int(os.environ.get("DIRDP_SLURM_TEST_STEPS", "60"))
LONG_RUN = "results/runs/smoke/mnist/alg1_eps1_seed0.json"
LONG_CONFIG = f"training={{steps: {STEPS}, checkpoint_every: 2, eval_every: {STEPS}}}"


pytestmark = pytest.mark.slow  # every test here is an integration test


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root: scripts/slurm_local.sh starts munged, slurmctld and slurmd as root"
    lacking = [t for t in TOOLS if not shutil.which(t)]
    if lacking:
        return f"needs Debian's SLURM and MUNGE ({APT}; .ci/run installs them as root). Missing: {', '.join(lacking)}"
    return None


MISSING = _missing()
REPORT: list[str] = []


def report(line: str) -> None:
    print(line)
    REPORT.append(line)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "test_slurm.txt").write_text("\n".join(REPORT) + "\n")


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """The local cluster (its state in a temporary folder), up once for the session (each xdist worker's: the file's
    tests run on one, scripts/test.sh) and stopped at its end."""
    if MISSING and os.environ.get("CI"):  # CI installs the packages (.ci/run): missing there is a failure
        pytest.fail(MISSING)
    if MISSING:
        pytest.skip(MISSING)
    env = dict(os.environ, DIRDP_SLURM_STATE=str(tmp_path_factory.mktemp("slurm-state")))
    t0 = time.time()
    proc = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"scripts/slurm_local.sh start failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    report(f"# local SLURM up in {time.time() - t0:.1f} s\n{proc.stdout.strip()}")
    yield env
    stop = subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=120)
    report(stop.stdout.strip() + stop.stderr.strip())


def run_env(data: Path) -> dict:
    return dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1", DIRDP_DATA=str(data),
                DIRDP_SLURM_PARTITION=PARTITION)


def snakemake(work: Path, *args, data: Path, log: Path) -> str:
    """Run Snakemake in ``work``, its output to ``log``; returns the output (fails the test on an error)."""
    return finished(start_snakemake(work, *args, data=data, log=log), log)


def start_snakemake(work: Path, *args, data: Path, log: Path) -> subprocess.Popen:
    """Start Snakemake in ``work``, its output to ``log`` (:func:`finished` waits for it)."""
    with open(log, "w") as out:
        proc = subprocess.Popen([*SNAKEMAKE, *args], cwd=work, env=run_env(data), stdout=out, stderr=subprocess.STDOUT)
    proc.args_said = " ".join(args)
    return proc


def finished(proc: subprocess.Popen, log: Path) -> str:
    """Wait for a Snakemake of :func:`start_snakemake`; its output (fails the test on an error)."""
    try:
        proc.wait(timeout=1800)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert proc.returncode == 0, f"snakemake {proc.args_said} failed ({proc.returncode}):\n{text[-6000:]}"
    return text


def submissions(output: str) -> list[tuple[str, str]]:
    """(Snakemake job id, SLURM job id) of every sbatch the plugin reported, in order."""
    return re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", output)


def slurm_job(jobid: str) -> dict:
    """What the controller says of a job: its state (squeue, the plugin's status query) and what it was given."""
    state = subprocess.run(["squeue", "--states=all", "--noheader", "--format=%i|%T", "-j", jobid],
                           capture_output=True, text=True).stdout.strip()
    show = subprocess.run(["scontrol", "show", "job", jobid], capture_output=True, text=True).stdout
    fields = dict(re.findall(r"(\w+)=(\S*)", show))
    return {"id": jobid, "state": state.split("|")[-1], **{k: fields.get(k) for k in (
        "JobName", "Partition", "NumCPUs", "MinMemoryNode", "TimeLimit", "TresPerNode", "RunTime", "ExitCode")}}


def sha(work: Path, path: str) -> str:
    return json.loads((work / path).read_text())["params_sha256"]


def outcome(work: Path, path: str) -> dict:
    """What a run's result says it trained to: its parameters' hash (None for LATENT, which records none), its
    loss and accuracy curves and its test accuracy."""
    return pick(json.loads((work / path).read_text()))


def pick(res: dict) -> dict:
    return {k: res.get(k) for k in ("params_sha256", "loss_curve", "accuracy_curve", "test_accuracy")}


def test_profile_partition_and_account_come_from_the_environment(tiny_root, tmp_path):
    """No cluster needed: what a dry run of the profile would submit, with and without the variables."""
    work = copy_workflow(tmp_path / "w")
    base = ["--profile", "profiles/slurm", "-n", "--configfile", "config/smoke.yaml", "--", LONG_RUN]
    for extra, partition, account in (({}, "gpu", ""),
                                      ({"DIRDP_SLURM_PARTITION": "a100", "DIRDP_SLURM_ACCOUNT": "proj7"}, "a100",
                                       "proj7")):
        env = {k: v for k, v in run_env(tiny_root).items() if not k.startswith("DIRDP_SLURM_")} | extra
        proc = subprocess.run([*SNAKEMAKE, *base], cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        resources = re.search(r"resources: (.*)", proc.stdout)[1]
        assert f"slurm_partition={partition}," in resources and f"slurm_account={account}," in resources, resources


def test_smoke_training_through_the_slurm_profile_equals_a_local_run(slurm, mirror_root, tmp_path):
    # the same training jobs run locally (the same commands, one thread each), in a copy of their own; only the train
    # rule, as through SLURM: the notebooks are the smoke DAG's test (tests/test_dag.py). Both at once: the local run
    # uses the CPU while the SLURM run mostly waits between its status checks.
    local = copy_workflow(tmp_path / "local")
    local_run = start_snakemake(local, "--cores", "2", "--configfile", "config/smoke.yaml", "--until", "train",
                                data=mirror_root, log=tmp_path / "local.log")
    t0 = time.time()
    work = copy_workflow(tmp_path / "slurm")
    try:
        out = snakemake(work, "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml", "--until", "train",
                        *SLURM_ARGS, data=mirror_root, log=tmp_path / "slurm.log")
    except BaseException:
        local_run.kill()
        local_run.wait()
        raise
    finished(local_run, tmp_path / "local.log")
    here = {str(p.relative_to(local)): json.loads(p.read_text())
            for p in sorted((local / "results/runs/smoke").rglob("*.json"))}
    jobs = submissions(out)
    runs = sorted(str(p.relative_to(work)) for p in (work / "results/runs/smoke").rglob("*.json"))
    # every run the smoke profile's train rule makes (Algorithm 1 at eps = 1 and inf, tempered, LATENT, the one-run
    # audit's canary run), one SLURM job each
    expected = sorted(Profile.load(REPO / "config/smoke.yaml").every_run())
    assert len(expected) >= 4 and len(jobs) == len(runs) and runs == expected, (jobs, runs, expected)
    report(f"\n# the smoke profile's {len(runs)} training jobs through profiles/slurm "
           f"({time.time() - t0:.0f} s)\nslurm id | state (squeue) | partition | cpus | memory | time limit | gres | "
           f"run time")
    for _, jobid in jobs:
        job = slurm_job(jobid)
        report(" | ".join(str(job[k]) for k in ("id", "state", "Partition", "NumCPUs", "MinMemoryNode", "TimeLimit",
                                                "TresPerNode", "RunTime")))
        assert job["state"] == "COMPLETED" and job["Partition"] == PARTITION, job
        # the profile's resources as SLURM granted them: the gres GPU, 32000 MB, 720 minutes, 1 CPU per thread
        assert (job["TresPerNode"], job["MinMemoryNode"], job["TimeLimit"], job["NumCPUs"]) == (
            "gres:gpu:1", "32000M", "12:00:00", "1"), job
    report("# the same runs locally (snakemake --cores 2 --until train): params_sha256")
    assert sorted(here) == runs, (sorted(here), runs)
    for run in runs:
        ours, theirs = outcome(work, run), pick(here[run])
        report(f"{run}: slurm {ours['params_sha256'] or '(none: LATENT, curves compared)'}  local "
               f"{theirs['params_sha256'] or '(none)'}")
        assert ours == theirs, run
    assert [outcome(work, run)["params_sha256"] is None for run in runs] == ["/latent_" in run for run in runs]


def test_a_cancelled_training_job_is_resubmitted_and_resumes_from_its_checkpoint(slurm, mirror_root, tmp_path):
    t0 = time.time()
    work = copy_workflow(tmp_path / "slurm")
    local = copy_workflow(tmp_path / "local")
    local_run = None
    log = tmp_path / "slurm.log"
    ckpt = work / (LONG_RUN + ".ckpt.pt")
    with open(log, "w") as out:
        proc = subprocess.Popen([*SNAKEMAKE, "--profile", "profiles/slurm", "--configfile", "config/smoke.yaml",
                                 "--config", LONG_CONFIG, *SLURM_ARGS, "--", LONG_RUN],
                                cwd=work, env=run_env(mirror_root), stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 1200
            while not ckpt.exists() and proc.poll() is None and time.time() < deadline:
                time.sleep(0.05)
            assert ckpt.exists(), f"no checkpoint {ckpt} appeared:\n{log.read_text()[-4000:]}"
            first = submissions(log.read_text())
            assert len(first) == 1, first
            cancelled = first[0][1]
            subprocess.run(["scancel", cancelled], check=True)
            t_cancel = time.time()
            # the uninterrupted run to compare with, trained locally while Snakemake waits to see the cancel and
            # the resubmitted job waits for its status checks (started only now: before the cancel it would slow
            # the SLURM job down to where its run could end before the cancel)
            local_run = start_snakemake(local, "--cores", "1", "--configfile", "config/smoke.yaml", "--config",
                                        LONG_CONFIG, "--", LONG_RUN, data=mirror_root, log=tmp_path / "local.log")
            proc.wait(timeout=1800)
        finally:
            for p in (proc, local_run):
                if p is not None and p.poll() is None:
                    p.kill()
                    p.wait()
    text = log.read_text()
    assert proc.returncode == 0, text[-6000:]
    jobs = submissions(text)
    assert len(jobs) == 2 and jobs[0][0] == jobs[1][0], jobs  # one Snakemake job, submitted twice
    resubmitted = jobs[1][1]
    first, second = slurm_job(cancelled), slurm_job(resubmitted)
    train_log = (work / "results/logs/runs/smoke/mnist/alg1_eps1_seed0.log").read_text()
    resumed = re.search(r"resumed from step (\d+) of (\d+)", train_log)
    report(f"\n# a training run of {STEPS} steps (checkpoint every 2) through profiles/slurm, scancel {cancelled} "
           f"once {ckpt.name} existed ({t_cancel - t0:.0f} s in), then ({time.time() - t_cancel:.0f} s)")
    for job in (first, second):
        report(f"slurm job {job['id']}: {job['state']} (squeue), exit {job['ExitCode']}, run time {job['RunTime']}")
    report("snakemake: " + " -> ".join(re.findall(r"Job \d+ has been submitted with SLURM jobid \d+|SLURM-job '\d+' "
                                                  r"failed, SLURM status is: '\w+'|Trying to restart job \d+", text)))
    report(f"the resubmitted job's training log: {resumed[0] if resumed else '(no resume line)'}")
    assert first["state"] == "CANCELLED" and second["state"] == "COMPLETED", (first, second)
    assert resumed and 2 <= int(resumed[1]) < STEPS and int(resumed[2]) == STEPS, train_log[-2000:]
    assert not ckpt.exists()  # a finished run deletes its checkpoint
    finished(local_run, tmp_path / "local.log")
    report(f"uninterrupted local run (started at the cancel, beside the resubmitted job; done "
           f"{time.time() - t_cancel:.0f} s after the cancel): params_sha256 slurm (cancelled, resumed) "
           f"{sha(work, LONG_RUN)}, local {sha(local, LONG_RUN)}")
    assert sha(work, LONG_RUN) == sha(local, LONG_RUN)
