"""What to rebuild after training runs land (``scripts/campaign.sh tables RUN.json...``), asked of Snakemake's own
DAG: the rules whose jobs read those runs. In ``snakemake --dag`` a run is the output of a ``train`` job, and the jobs
that read it are those its node has an edge to; forced (``--forcerun RULE...``), Snakemake reruns those rules and
everything downstream of them (the index after a table: ``deps`` in rules/common.smk keeps the inputs that a forced
rule makes out of ``ancient()``), and nothing else. No file time is touched, and with ``--config train=false`` the
runs are inputs on disk: no train job is planned.

    python -m dirdp.campaign.rebuild --configfile config/cpu.yaml results/runs/cpu/mnist/alg1_eps1_seed2.json
    # prints the rules that read it, one a line (exit 2, one line on stderr: a run no train job of the DAG makes)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

# the train rule's output (rules/train.smk), filled from its job's wildcards as the DAG labels them
RUN_PATH = "results/runs/{profile}/{dataset}/{tag}.json"
# a node of `snakemake --dag`: `4[label = "train\ndataset: mnist\nprofile: cpu\ntag: alg1_eps1_seed0", ...]` (the
# rule, then each wildcard of the job); an edge: `4 -> 7` (job 7 reads what job 4 makes)
_NODE = re.compile(r'^\s*(\d+)\[label = "([^"]*)"', re.M)
_EDGE = re.compile(r"^\s*(\d+) -> (\d+)\s*$", re.M)
DAG_ARGS = ("--config", "train=false")  # the DAG of the runs on disk: no train job is planned


def readers(dot: str, runs: list[str]) -> list[str]:
    """The rules (sorted, ``all`` left out) whose jobs read ``runs`` in the DAG ``dot`` (``snakemake --dag``).
    Raises ValueError naming a run that no train job of the DAG makes (not a run of the profile, or not on disk
    with train=false)."""
    rules, made = {}, {}
    for node, label in _NODE.findall(dot):
        rule, *wildcards = label.split("\\n")
        rules[node] = rule
        if rule == "train":
            made[RUN_PATH.format(**dict(w.split(": ", 1) for w in wildcards))] = node
    if not rules:
        raise ValueError("no DAG in Snakemake's output (snakemake --dag printed no job)")
    nodes = set()
    for run in runs:
        path = os.path.normpath(run)
        if path not in made:
            raise ValueError(f"{run}: no train job of the profile's DAG makes it (is it a run of this profile, "
                             f"under {RUN_PATH.format(profile='<profile>', dataset='<dataset>', tag='<tag>')}?)")
        nodes.add(made[path])
    return sorted({rules[b] for a, b in _EDGE.findall(dot) if a in nodes} - {"all"})


def dag(configfile: str, *, cwd: str | None = None) -> str:
    """``snakemake --dag`` of the profile ``configfile`` with train=false, run in ``cwd`` (a checkout of the
    workflow), by this interpreter. Raises ValueError with Snakemake's last lines when it fails."""
    cmd = [sys.executable, "-m", "snakemake", "--dag", "--cores", "1", "--configfile", configfile, *DAG_ARGS]
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        raise ValueError(f"snakemake --dag failed ({done.returncode}): {tail}")
    return done.stdout


def forced_rules(configfile: str, runs: list[str], *, cwd: str | None = None) -> list[str]:
    """The rules to force (``--forcerun``) so that Snakemake rebuilds what reads ``runs``: :func:`readers` of
    :func:`dag`."""
    return readers(dag(configfile, cwd=cwd), runs)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dirdp.campaign.rebuild", description=__doc__.split("\n\n")[0])
    p.add_argument("--configfile", default="config/cpu.yaml", help="the profile (default: config/cpu.yaml)")
    p.add_argument("runs", nargs="+", metavar="RUN.json", help="result files of the runs that landed")
    args = p.parse_args(argv)
    try:
        rules = forced_rules(args.configfile, args.runs)
    except ValueError as err:
        print(f"campaign: {err}", file=sys.stderr)
        return 2
    print("\n".join(rules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
