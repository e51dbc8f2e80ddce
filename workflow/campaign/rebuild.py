"""What to rebuild after training runs land (``scripts/campaign.sh tables RUN.json...``), asked of Snakemake itself:
the rules whose jobs read those runs. A dry run of the profile with train=false and every rule but ``train`` forced
lists each job with its input files (the runs on disk among them, the profile's own and those its tables show from
another profile, ``also_show``); the rules of the jobs that list a run are its readers. Forced (``--forcerun
RULE...``), Snakemake reruns those rules and everything downstream of them (the index after a table: ``deps`` in
rules/common.smk keeps the inputs that a forced rule makes out of ``ancient()``), and nothing else. No file time is
touched, and with ``--config train=false`` the runs are inputs on disk: no train job is planned, in the query or in
the rebuild.

    python -m workflow.campaign.rebuild --configfile config/cpu.yaml results/runs/cpu/mnist/alg1_eps1_seed2.json
    # prints the rules that read it, one a line (exit 2, one line on stderr: a run that no job reads)
    python -m workflow.campaign.rebuild --configfile config/cpu.yaml workflow/report/compare.py
    # the same for a source file: the rules that read it (after a change to how tables are made)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

from dirdp import run_result
from workflow.audit import released

TRAIN = ("--config", "train=false")  # the DAG of the runs on disk: no train job is planned
# The rules that read a run's released weights (the ``.model.pt`` beside its JSON), or the row its weights gave (the
# record ``.json.membership``, made where the weights were), not its JSON alone: the audit of the released models
# (notebooks/audit_released_models.ipynb lists a result with neither as "not audited"). A run with neither in the
# checkout (full width: .gitignore keeps the weights out of git) changes nothing such a rule writes, so it does not
# make that rule a reader (and a rebuild after it does not spend time on the models that did not change).
WEIGHT_READERS = ("audit_released_models",)
# one job of a dry run: "rule NAME:" (or "localrule NAME:"), then its indented fields, "    input: a, b, c" among them
_JOB = re.compile(r"^(?:local)?rule (\w+):\n((?:[ \t]+.*(?:\n|$))*)", re.M)


def weights(run: str) -> str:
    """The released weights of the run whose result is ``run`` (:func:`dirdp.run_result.weights_path`)."""
    return str(run_result.weights_path(run))


def record(run: str) -> str:
    """The record of the membership row of the run whose result is ``run`` (:func:`workflow.audit.released.record_path`)."""
    return str(released.record_path(run))


def readers(dry_run: str, runs: list[str], weightless: frozenset[str] = frozenset()) -> list[str]:
    """The rules (sorted, ``all`` left out) whose jobs list one of ``runs`` as input in ``dry_run`` (the output of
    ``snakemake -n`` with those jobs planned), except :data:`WEIGHT_READERS` for the runs in ``weightless`` (their
    weights are not in the checkout). Also any other input file: a source file gives the rules that read it. Raises
    ValueError naming a run that no job reads (not a run of the profile or of what its tables show, or not on disk)."""
    inputs: dict[str, set[str]] = {}
    for rule, fields in _JOB.findall(dry_run):
        listed = re.search(r"^[ \t]+input: (.*)$", fields, re.M)
        inputs.setdefault(rule, set()).update(f.strip() for f in (listed[1].split(",") if listed else ()))
    if not inputs:
        raise ValueError("no job in Snakemake's dry run (it planned nothing)")
    out = set()
    for run in runs:
        found = {rule for rule, files in inputs.items() if os.path.normpath(run) in files} - {"all"}
        if not found:
            raise ValueError(f"{run}: no job of the profile's DAG reads it (a run of this profile, or of one its "
                             "tables show, that is on disk?)")
        out |= found - set(WEIGHT_READERS) if run in weightless else found
    return sorted(out)


def _snakemake(*args: str, cwd: str | None) -> str:
    done = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(f"snakemake {args[0]} failed ({done.returncode}): "
                         + " | ".join(done.stderr.strip().splitlines()[-3:]))
    return done.stdout


def dry_run(configfile: str, *, cwd: str | None = None) -> str:
    """``snakemake -n`` of the profile ``configfile`` with train=false and every rule but ``train`` (and ``all``)
    forced, run in ``cwd`` (a checkout of the workflow) by this interpreter: every job but training, with its
    inputs. Raises ValueError with Snakemake's last lines when it fails."""
    listed = _snakemake("--list-rules", "--configfile", configfile, *TRAIN, cwd=cwd)
    rules = [m[1] for m in re.finditer(r"^(\w+)", listed, re.M) if m[1] not in ("train", "all")]
    return _snakemake("-n", "--cores", "1", "--configfile", configfile, *TRAIN, "--forcerun", *rules, cwd=cwd)


def forced_rules(configfile: str, runs: list[str], *, cwd: str | None = None, note=None) -> list[str]:
    """The rules to force (``--forcerun``) so that Snakemake rebuilds what reads ``runs``: :func:`readers` of
    :func:`dry_run`, the runs with neither their weights nor their membership record in ``cwd`` (the checkout)
    weightless. ``note`` (a callable) is told, in one line, which weight readers are left as they are and why."""
    weightless = frozenset(r for r in runs if r.endswith(".json")
                           and not any(os.path.exists(os.path.join(cwd or ".", f(r))) for f in (weights, record)))
    listed = dry_run(configfile, cwd=cwd)
    out = readers(listed, runs, weightless)
    left = sorted(set(readers(listed, runs)) - set(out))
    if left and note:
        note(f"not forced: {', '.join(left)} (it audits released weights, and those of "
             f"{', '.join(sorted(weightless))} are not in the checkout, nor a record of the row they gave: what it "
             "writes cannot change)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m workflow.campaign.rebuild", description=__doc__.split("\n\n")[0])
    p.add_argument("--configfile", default="config/cpu.yaml", help="the profile (default: config/cpu.yaml)")
    p.add_argument("runs", nargs="+", metavar="RUN.json",
                   help="result files of the runs that landed (or source files whose change is to be shown)")
    args = p.parse_args(argv)
    try:
        rules = forced_rules(args.configfile, args.runs, note=lambda line: print(f"campaign: {line}", file=sys.stderr))
    except ValueError as err:
        print(f"campaign: {err}", file=sys.stderr)
        return 2
    print("\n".join(rules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
