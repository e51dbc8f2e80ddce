"""The train path needs none of the workflow's heavy extras: with snakemake, papermill, medmnist,
opacus, jupyter, nbval, jsonschema and pytest impossible to import (as on the GPU campaign's machine, which has
torch, numpy, scipy, pandas, matplotlib, tqdm and pyyaml alone), Algorithm 1 trains from the CLI, ``--help`` and
``rstar`` work, DP-SGD fails with one clear line (exit 2), and the campaign path (``campaign run --smoke``:
profile check, test lane, benchmark, training without Snakemake, pack; ``campaign status``) runs, its subprocesses
blocked too."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCKED = ("snakemake", "papermill", "medmnist", "opacus", "jupyter", "nbval", "jsonschema", "pytest", "_pytest")

# runs ``python -m <module> <argv>`` (its first argument names the module: dirdp or workflow) with a meta-path finder in
# front that refuses the blocked names, whether or not they are installed here
RUNNER = f"""
import runpy, sys

BLOCKED = {BLOCKED!r}


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
        return None


sys.meta_path.insert(0, Blocker())
for mod in list(sys.modules):
    if mod.partition(".")[0] in BLOCKED:
        del sys.modules[mod]
sys.argv = [f"python -m {{sys.argv[1]}}", *sys.argv[2:]]
runpy.run_module(sys.argv[0].split()[-1], run_name="__main__", alter_sys=True)
"""


# the same finder for every Python process started with it on PYTHONPATH (the campaign's train, bench and test-lane
# subprocesses)
SITECUSTOMIZE = RUNNER.split("sys.argv =")[0]


def run_blocked(args, tiny_root=None, timeout=300, site=None, module="dirdp"):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if tiny_root is not None:
        env["DIRDP_DATA"] = str(tiny_root)
    if site is not None:
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    return subprocess.run([sys.executable, "-c", RUNNER, module, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_blocker_blocks():
    code = RUNNER.split("sys.argv =")[0] + "import opacus\n"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "No module named 'opacus' (blocked by the test)" in proc.stderr


def train_blocked(method: str, eps: str, tiny_root, tmp_path):
    """A 3-step tiny run of ``method`` with the workflow extras blocked: (process, result path)."""
    out = tmp_path / f"{method}-{eps}.json"
    return run_blocked(["train", "--method", method, "--dataset", "mnist", "--eps", eps, "--steps", "3", "--q", "0.25",
                        "--width", "0.0625", "--no-progress", "--out", str(out)], tiny_root), out


@pytest.mark.slow
@pytest.mark.parametrize("eps", ["1", "inf"])
def test_alg1_trains_without_the_workflow_extras(tiny_root, tmp_path, eps):
    proc, out = train_blocked("alg1", eps, tiny_root, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "blocked by the test" not in proc.stderr
    rec = json.loads(out.read_text())
    assert rec["method"] == "alg1" and rec["steps"] == 3
    assert (rec["rstar"] is None) == (eps == "inf")
    assert all(math.isfinite(v) for _, v in rec["loss_curve"])


@pytest.mark.slow
@pytest.mark.parametrize("eps", ["1", "inf"])
def test_dpsgd_without_opacus_is_one_clear_error(tiny_root, tmp_path, eps):
    proc, out = train_blocked("dpsgd", eps, tiny_root, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "Opacus" in errors[0] and "pip install opacus" in errors[0] and "PYTHONPATH" in errors[0]
    assert not out.exists()


def test_help_and_rstar_without_the_workflow_extras():
    helped = run_blocked(["--help"], timeout=120)
    assert helped.returncode == 0, helped.stderr
    assert "rstar" in helped.stdout and "train" in helped.stdout
    r = run_blocked(["rstar", "--preset", "mnist", "--eps", "1"], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "r* = 0.27" in r.stdout  # r* = 0.277068 at the MNIST protocol


@pytest.mark.slow
def test_the_campaign_runs_without_snakemake_jsonschema_and_pytest(tiny_root, tmp_path):
    """What the GPU machine lacks, blocked in this process and every subprocess: the profile is checked (its check
    needs no jsonschema), the test lane says it did not run, the runs train without Snakemake (the
    same train commands, in the plan's order, through xargs -P K) and the pack is made."""
    site, work, pack = tmp_path / "site", tmp_path / "work", tmp_path / "pack"
    site.mkdir()
    proc = run_blocked(["campaign", "run", "--smoke", "--max-runs", "2", "--workdir", str(work), "--pack", str(pack)],
                       tiny_root, timeout=600, site=site, module="workflow")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    (summary,) = (work / "results/campaign/gpu-smoke").glob("*/summary.json")
    s = json.loads(summary.read_text())
    assert s["tests"]["ran"] is False and "pytest is not importable" in s["tests"]["last_line"]
    assert s["bench"]["returncode"] == 0 and s["started"] == s["finished"] == 2
    assert [r["status"] for r in s["runs"]] == ["finished"] * 2
    assert s["train"]["scheduler"] == "xargs" and s["train"]["command"][:5] == ["xargs", "-d", "\n", "-P", "2"]
    jobs = (summary.parent / "jobs.txt").read_text().splitlines()
    assert [line.split(" --out ")[1].split()[0] for line in jobs] == [
        str(work / f"results/runs/gpu-smoke/fashionmnist/alg1_eps2_seed{s}.json") for s in range(2)]
    assert all(" -m dirdp train --dataset fashionmnist --eps 2 --seed " in line and " --threads 1 " in line
               for line in jobs)
    assert (work / "results/runs/gpu-smoke/fashionmnist/alg1_eps2_seed0.json").exists()
    assert list(pack.glob("campaign.tar.gz.*"))
    status = run_blocked(["campaign", "status", "--config", "config/gpu.yaml", "--workdir", str(work)], site=site,
                         timeout=120, module="workflow")
    assert status.returncode == 0 and "0 of 70 runs finished" in status.stdout, status.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("profile: bad\nextends: gpu\ntraining: {widht: 1}\n")
    typo = run_blocked(["campaign", "status", "--config", str(bad)], site=site, timeout=120, module="workflow")
    assert typo.returncode == 2 and "unknown key 'widht' (did you mean 'width'?)" in typo.stderr, typo.stderr


def test_the_profile_check_names_the_key_and_what_is_wrong_without_jsonschema():
    """profile_schema.errors walks config/schema.yaml itself (no jsonschema: the GPU machine has none): the committed
    profiles pass it, and each usual mistake is one line naming the key and what is wrong."""
    import yaml

    from workflow import profile_schema as ps

    for path in sorted((REPO / "config").glob("*.yaml")):
        if path.name != "schema.yaml":
            assert ps.errors(yaml.safe_load(path.read_text())) == [], path
    x = {"profile": "x", "extends": "paper"}
    assert ps.errors(dict(x, training={"widht": 1})) == [
        "training: unknown key 'widht' (did you mean 'width'?); allowed: seeds, width, steps, q, train_subset, "
        "device, threads, threads_by_width, eval_every, checkpoint_every, precision"]
    assert ps.errors(dict(x, training={"seeds": "a"})) == ["training.seeds: 'a' is not an integer or null"]
    assert ps.errors({"training": {"device": "gpu"}}, partial=True) == [
        "training.device: 'gpu' is not cpu or cuda (or cuda:<n>)"]
    (missing,) = ps.errors({"profile": "x", "training": {}})
    assert missing.startswith("missing keys 'objects', 'datasets', 'grids', ") and missing.endswith(
        "'explore_kappa', 'training.device': declare them, or add `extends: paper` (a profile without `extends:` "
        "declares every key; with it, each key it leaves out comes from config/paper.yaml)")
    assert ps.errors({"extends": "paper"}) == ["(top level): 'profile' is a required property"]
    assert ps.errors({"training": {"threads_by_width": [{"width": 1}]}}, partial=True) == [
        "training.threads_by_width.0: 'threads' is a required property"]
    assert ps.errors(dict(x, grids={"table2_mnst": {}}))[0].startswith(
        "grids: unknown key 'table2_mnst' (did you mean 'table2_mnist'?); allowed: table1_cifar10, ")
    assert ps.errors(dict(x, objects=[])) == ["objects: [] is not a non-empty list of paper objects (for every "
                                              "object: objects: null in a profile, or leave objects out of --config)"]
    assert ps.errors({"audit_paper_model": {"first_layer": {"widths": [1], "trials": 1, "variants": [{}]}}},
                     partial=True) == ["audit_paper_model.first_layer.variants.0: {} should be non-empty"]
    assert ps.errors({"audit": {"inversion": {"models": [["a", 1, 2], ["b"]]}}}, partial=True) == [
        "audit.inversion.models.0: ['a', 1, 2] is too long (at most 2 items)",
        "audit.inversion.models.1: ['b'] is too short (at least 2 items)"]
    assert ps.errors({"profile": "x", "extends": "paper", "training": None}) == []  # null: the parent's
    assert "training: None is not of type 'object'" in ps.errors({"profile": "x", "training": None})


def test_the_profile_check_knows_every_keyword_the_schema_uses():
    from workflow import profile_schema as ps

    def keywords(s) -> set:
        if isinstance(s, list):
            return set().union(*map(keywords, s))
        if not isinstance(s, dict):
            return set()
        named = {k: v for k, v in s.items() if k in ("properties", "$defs")}  # keys: names, values: schemas
        inner = [v for k, v in s.items() if k not in ("enum", "required", *named)]
        return set(s) | keywords(inner) | keywords([x for v in named.values() for x in v.values()])

    schema = ps.schema()
    assert keywords(schema) <= ps.KEYWORDS, keywords(schema) - ps.KEYWORDS
    assert "if" not in keywords({k: schema[k] for k in ("properties", "$defs")})  # if/then: the top level only
