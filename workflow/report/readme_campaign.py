"""Generated blocks of the CPU evidence campaign (see :mod:`workflow.report.readme`), each a table of one result file:
accuracy against width (``width_effect.csv``), the cost of a full-width step
(``bench_full_width_t<n>.json``) and the precision sweep (``bench_sweep*.json``). Nothing here is typed by hand."""

from __future__ import annotations

import pandas as pd

from dirdp import methods
from dirdp.protocol import fmt_eps

NAMES = {"mnist": "MNIST", "fashionmnist": "FashionMNIST", "cifar10": "CIFAR10", "dermamnist": "DermaMNIST",
         "svhn": "SVHN"}


class ReadmeError(ValueError):
    """A README, docs page or results folder the generator cannot use; the message says which and what to do.
    Defined here, the one block module that imports no other (every block module may raise it without an import
    circle); :mod:`workflow.report.readme` re-exports it."""


def acc(mean: float, std: float | None, n: int) -> str:
    """Mean over seeds with its spread and n: "85.30 (n = 1)", "85.10 ± 0.21 (n = 3)"."""
    mean = round(mean, 6)  # 85.07499999999999 and 85.075 (the same mean, read from two files) print alike
    if n >= 2 and std is not None and not pd.isna(std):
        return f"{mean:.2f} ± {std:.2f} (n = {n})"
    return f"{mean:.2f} (n = {n})"


def width_effect(src) -> str:
    """``width_effect.csv`` as a table: Algorithm 1's accuracy at each (data set, eps, width, precision) beside the
    paper's full-width value, FashionMNIST first."""
    t = src.csv("width_effect")
    if "precision" not in t:  # a table made before runs had a precision: every run was fp32
        t["precision"] = "fp32"
    if "dataset" not in t:  # a table made before the MNIST panel: FashionMNIST alone
        t["dataset"] = "fashionmnist"
    t = t.assign(order=t.dataset != "fashionmnist").sort_values(["order", "dataset", "eps", "width", "precision"])
    names = {"fashionmnist": "FashionMNIST", "mnist": "MNIST"}
    out = ["| data set | eps | width | test acc. ours | paper (full width) | ours - paper |", "|---|---|---|---|---|---|"]
    for row in t.itertuples():
        paper = "—" if pd.isna(row.paper_full_width) else (
            f"{row.paper_full_width:.2f}" + ("" if pd.isna(row.paper_std) else f" ± {row.paper_std:.2f}"))
        out.append(f"| {names.get(row.dataset, row.dataset)} | {fmt_eps(row.eps)} | "
                   f"{row.width:g}x{', bf16' if row.precision == 'bf16' else ''} | "
                   f"{acc(row.mean, row.std, int(row.n))} | {paper} | {row.diff_to_paper:+.2f} |")
    return "\n".join(out)


def full_width_cost(src) -> str:
    """What a full-width FashionMNIST run costs on these cores: the measured Algorithm 1 step of the paper's
    Inception (batch 250) at each thread count benchmarked (``bench_full_width_t<n>.json``), and that step times the
    paper's T (steps alone: evaluations and checkpoints add to it)."""
    from dirdp.presets import PRESETS

    steps = PRESETS["fashionmnist"].steps
    found = sorted(src.folder.glob("bench_full_width_t*.json"))
    if not found:
        raise ReadmeError(f"{src.folder}: no bench_full_width_t<n>.json (make one with python -m dirdp bench "
                          "--models inception --width 1 --threads <n> --json-out ...)")
    recs = sorted(((r["rows"][0], r["provenance"]) for r in (src.json(p.stem) for p in found)),
                  key=lambda x: x[0]["threads"])
    out = [f"| threads | Algorithm 1 s/step (median) | T = {steps:,} steps (h) | 1-min load at its end | machine | "
           "command |", "|---|---|---|---|---|---|"]
    for row, prov in recs:
        out.append(f"| {row['threads']} | {row['algorithm1_s']:.2f} (of {row['reps']}) | "
                   f"{row['algorithm1_s'] * steps / 3600:.1f} | {prov['config']['load_average_1min_at_end']:.1f} | "
                   f"{prov['device']} | `{prov['config']['command']}` |")
    return "\n".join(out)


def cpu_precision(src) -> str:
    """Every CPU precision sweep of the profile (``bench_sweep*.json``, ``python -m dirdp bench --sweep``) as tables:
    each machine and the load it ran under; per configuration, each machine's median s/step, its ratio to fp32 and
    its fraction of that machine's measured peak; the matmul peaks."""
    found = sorted(src.folder.glob("bench_sweep*.json"))
    if not found:
        raise ReadmeError(f"{src.folder}: no bench_sweep*.json (make one with python -m dirdp bench --sweep "
                          "--json-out ...)")
    recs = [(p.name, src.json(p.stem)) for p in found]
    out = ["| file | CPU | avx512_bf16 | amx_bf16 | 1-min load before | other processes' CPU while it ran | command |",
           "|---|---|---|---|---|---|---|"]
    for name, rec in recs:
        load = rec["load"]
        out.append(f"| `{name}` | {rec['cpu']} | {'yes' if rec['avx512_bf16'] else 'no'} | "
                   f"{'yes' if rec['amx_bf16'] else 'no'} | {load['load_1min_before']:.2f} | "
                   f"{100 * load['others_cpu_fraction']:.1f}% of {load['cpus']} | `{rec['provenance']['config']['command']}` |")
    cpus = [rec["cpu"] for _, rec in recs]
    out += ["", "| width | method | precision | threads | " + " | ".join(
        f"{c}: s/step (median) | vs fp32 | of its peak" for c in cpus) + " |", "|---|---|---|---|" + "---|---|---|" * len(cpus)]

    def key(r):
        return (-r["width"], r["method"], r["threads"], r["precision"])

    rows = {key(r): r for _, rec in recs for r in rec["rows"]}
    for k in sorted(rows):
        r, cells = rows[k], []
        for _, rec in recs:
            m = next((x for x in rec["rows"] if key(x) == k), None)
            cells.append("— | — | —" if m is None else
                         f"{m['median_s']:.3f} | {m['vs_fp32']:.2f} | {100 * m['fraction_of_peak']:.0f}%")
        out.append(f"| {r['width']:g}x | {methods.label(r['method']) if methods.is_ours(r['method']) else 'non-private'} | "
                   f"{r['precision'].replace('+cl', ' + channels_last')} | {r['threads']} | " + " | ".join(cells) + " |")
    threads = sorted({int(k.rsplit("_t", 1)[1]) for _, rec in recs for k in rec["peaks_gflops"]})
    out += ["", "| threads | " + " | ".join(f"{c}: fp32 matmul peak (GFLOP/s) | bf16 (GFLOP/s)" for c in cpus) + " |",
            "|---|" + "---|---|" * len(cpus)]
    def peak(rec, key):
        return "—" if key not in rec["peaks_gflops"] else f"{rec['peaks_gflops'][key]:.0f}"

    for t in threads:
        out.append(f"| {t} | " + " | ".join(f"{peak(rec, f'fp32_t{t}')} | {peak(rec, f'bf16_t{t}')}" for _, rec in recs)
                   + " |")
    return "\n".join(out)
