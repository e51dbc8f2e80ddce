"""Speed of the core: one r* solve, the Table 7 grid, and the mechanism's overhead. A thin caller of the one
benchmark entry point, ``python -m workflow bench --core`` (workflow.bench.accounting); its arguments are passed on.

    python benchmarks/bench_core.py            # prints medians and ratios, one core

Targets: one r* solve <= 20 ms, Table 7 grid <= 1 s (the paper: "less than one
minute" per epsilon); the mechanism's forward+backward for a [250, 10] batch is reported next
to plain cross-entropy.
"""

import os
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from workflow.__main__ import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["bench", "--core", *sys.argv[1:]]))
