"""Per-step cost of Algorithm 1 against non-private training, model by model (``python -m dirdp bench``).

A step = forward, loss, backward and SGD update on a fixed batch of the paper's size for that
model's data set. "non-private" uses cross-entropy on the logits, "Algorithm 1" the Dirichlet
mechanism's loss; everything else is identical. The two are timed interleaved (so drifts in
machine load hit both alike) and summarised by their medians and their ratio.

:func:`campaign_bench` adds DP-SGD (Opacus, on the GroupNorm twin), precisions (fp32, bf16 autocast
with channels_last) and peak CUDA memory, for a GPU; :func:`project` turns its rows into the GPU time
of a Table-1 cell and of a whole profile; :func:`print_campaign_bench` prints both.

:func:`core_bench` (``bench --core``) times the core without a model: one r* solve, the Table 7 grid, the mechanism's
loss beside cross-entropy.

Modules: :mod:`~dirdp.bench.core` (the timed steps, :func:`bench_model`, :func:`bench_baselines`, :func:`main`),
:mod:`~dirdp.bench.campaign` (:func:`campaign_bench`, :func:`campaign_main`), :mod:`~dirdp.bench.projection`
(:func:`project`, :func:`print_campaign_bench`), :mod:`~dirdp.bench.accounting` (:func:`core_bench`,
:func:`core_text`). Every name is re-exported here; to monkeypatch one, patch the submodule that looks it up.
"""

from dirdp.bench.accounting import core_bench, core_text
from dirdp.bench.campaign import (PRECISIONS, _campaign_dpsgd, _campaign_row, _opacus_missing, _to_format,
                                  campaign_bench, campaign_main)
from dirdp.bench.core import (BENCH_SETS, _bench_set, _cross_entropy, _dpsgd_step, _interleaved, _losses,
                              _peak_memory, _setup, _step, _sync, bench_baselines, bench_model, main)
from dirdp.bench.projection import _hours, _run_cost, print_campaign_bench, project

__all__ = ["BENCH_SETS", "PRECISIONS", "bench_baselines", "bench_model", "campaign_bench", "campaign_main", "core_bench",
           "core_text", "main",
           "print_campaign_bench", "project"]
