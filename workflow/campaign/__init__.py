"""A campaign: a profile's training runs in priority order, K at a time, inside a wall-clock budget.

Two uses, one machinery:

- **The GPU campaign** (``scripts/gpu_campaign.sh`` = ``python -m dirdp campaign run --config config/gpu.yaml``):
  on one CUDA GPU, inside a budget (default 540 s), it runs the CUDA test lane (``pytest -m cuda``, where pytest is
  importable: the summary says whether it ran), the
  benchmark (:func:`workflow.bench.campaign_bench`: per-step time of non-private, Algorithm 1 and DP-SGD for the
  full-width models, fp32 and bf16 + channels_last, with projections), then starts the runs that the benchmark's
  steps/s says can finish in the budget (the queue fitted to the budget, :func:`~workflow.campaign.fit.fit_runs`; without a
  budget, or with ``--k``/``--no-fit``: the queue K runs at a time)
  (the models leave a large GPU mostly idle, so several processes side by side is the point), and packs what it
  made into a few files of bounded size that ``python -m dirdp campaign unpack`` puts back into the repository: on
  a GPU node without network, the tree, the data and the wheels the node lacks are copied in beforehand
  (``scripts/gpu_prepare.sh``, its size checked by :mod:`~workflow.campaign.travel`) and the pack is copied back.
- **The CPU evidence campaign** (``scripts/campaign.sh``): the same queue runner in the background with no
  budget, one thread per run; ``campaign status`` says where each run stands.

Each run is an ordinary ``python -m dirdp train ... --out results/runs/<profile>/<dataset>/<tag>.json``
process with the profile's own arguments (the DAG job's), so the DAG, the campaign and a person at a shell
all make, resume and skip the same files. A finished run (its JSON exists) is skipped; a run with a
checkpoint resumes; a run another process is training (its lock is held) is left alone. When the budget
runs out, the runner sends SIGTERM: each run finishes its step, writes its checkpoint and exits (75), and
the next ``campaign run`` resumes it.

Modules: :mod:`~workflow.campaign.queue` (jobs and the K-at-a-time runner), :mod:`~workflow.campaign.packing`
(packing and unpacking), :mod:`~workflow.campaign.fit` (K and the queue fitted to the budget),
:mod:`~workflow.campaign.summary` (per-run records and the summary text), :mod:`~workflow.campaign.travel` (what a bundle
for a GPU node without network weighs, against the size cap),
:mod:`~workflow.campaign.runner` (the driver, K, status), :mod:`~workflow.campaign.rebuild` (the rules whose jobs read runs
that landed, asked of Snakemake: what ``scripts/campaign.sh tables`` forces). Every name is re-exported here; to
monkeypatch one, patch the submodule that looks it up.
"""

from workflow.campaign.packing import MIB, pack, pack_list, unpack
from workflow.campaign.queue import (EXIT_INTERRUPTED, REPO, Job, _ckpt_step, _finish, _launch, _now, describe, plan,
                                  run_queue)
from workflow.campaign.rebuild import forced_rules
from workflow.campaign.runner import (SMOKE_TRAINING, _dirty_code, _remaining, _step, choose_k, fit_runs, gpu_sample,
                                   load_profile, run_campaign, run_seconds, status)
from workflow.campaign.summary import _record, report

__all__ = ["EXIT_INTERRUPTED", "MIB", "REPO", "SMOKE_TRAINING", "Job", "choose_k", "describe", "fit_runs", "forced_rules",
           "gpu_sample", "load_profile", "pack", "pack_list", "plan", "report", "run_campaign", "run_queue", "status",
           "unpack"]
