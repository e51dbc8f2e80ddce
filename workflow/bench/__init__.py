"""Per-step cost of Algorithm 1 against non-private training, model by model (``python -m workflow bench``).

A step = forward, loss, backward and SGD update on a fixed batch of the paper's size for that
model's data set. "non-private" uses cross-entropy on the logits, "Algorithm 1" the Dirichlet
mechanism's loss; everything else is identical. The two are timed interleaved (so drifts in
machine load hit both alike) and summarised by their medians and their ratio.

Modules: :mod:`~workflow.bench.core` (the timed steps: ``bench_model``, ``bench_baselines``, ``main``),
:mod:`~workflow.bench.campaign` (``campaign_bench``: DP-SGD on the GroupNorm twin beside them, fp32 and bf16 autocast
with channels_last, peak CUDA memory, for a GPU; ``campaign_main``), :mod:`~workflow.bench.projection` (``project``:
its rows as the GPU time of a Table-1 cell and of a whole profile; ``print_campaign_bench``),
:mod:`~workflow.bench.accounting` (``core_bench``, ``bench --core``: the core without a model, one r* solve, the
Table 7 grid, the mechanism's loss beside cross-entropy) and :mod:`~workflow.bench.sweep` (the CPU precision sweep,
``bench --sweep``).
"""
