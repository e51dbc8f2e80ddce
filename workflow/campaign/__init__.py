"""A campaign: a profile's training runs in its priority order, inside a wall-clock budget, trained by Snakemake.

Snakemake is the one scheduler. A campaign hands it the runs not yet done, in the profile's priority order
(``campaign: queue``, which is each train job's Snakemake priority too), as targets of ``snakemake --keep-going``,
K at a time; at the budget every run gets SIGTERM, writes its checkpoint and stops, and the next campaign resumes it
(a train job rerun resumes from its checkpoint). Each run is the DAG's own train job (``python -m dirdp train ...
--out results/runs/<profile>/<dataset>/<tag>.json``), so the DAG, the campaign and a person at a shell all make,
resume and skip the same files; a run another process is training (its lock is held) is left alone.

Two uses, one machinery (``python -m workflow campaign run``):

- **The CPU evidence campaign** (``scripts/campaign.sh start|status|stop|land|save|tables``): the cpu profile's runs in
  the background with no budget, one thread a run, K side by side; ``campaign status`` says where each run stands;
  ``land`` commits the results that landed; ``save`` commits them and parks the checkpoints of unfinished runs in
  git history, out of the tree (:mod:`~workflow.campaign.parked`); ``tables`` rebuilds what reads the runs that
  landed (:mod:`~workflow.campaign.rebuild` asks Snakemake which rules those are).
- **The GPU campaign** (``scripts/gpu_campaign.sh``): on one CUDA GPU, inside a budget (default 540 s), the CUDA
  test lane, the benchmark (``python -m workflow bench --campaign``), then the runs the benchmark's steps/s says can
  finish in the budget (:mod:`~workflow.campaign.fit`), and a pack of what it made (:mod:`~workflow.campaign.packing`)
  that ``campaign unpack`` puts back into the repository; for a GPU node without network, what travels there is
  measured against a size cap (:mod:`~workflow.campaign.travel`), and where the node has no Snakemake the same train
  commands go through ``xargs -P K``.

Modules: :mod:`~workflow.campaign.plan` (the runs in order, where each stands), :mod:`~workflow.campaign.train` (the
training step: Snakemake until the deadline), :mod:`~workflow.campaign.run` (the driver), :mod:`~workflow.campaign.summary`
(what it did), and those above.
"""
