"""Generated blocks of the CPU evidence campaign (see :mod:`workflow.report.readme`), each a table of one result file:
accuracy against width (``width_effect.csv``), the cost of a full-width step
(``bench_full_width_t<n>.json``), the layout of runs on the cores (``bench_layout*.json``), DP-SGD's fastest full-width
step (``bench_dpsgd*.json``) and the precision sweep (``bench_sweep*.json``). Nothing here is typed by hand."""

from __future__ import annotations

from dirdp import methods
from dirdp.protocol import fmt_eps
from workflow.report.labels import DATASETS as NAMES
from workflow.report.labels import acc, pm
from workflow.report.labels import width as width_label
from workflow.report.markdown import columns, table


class ReadmeError(ValueError):
    """A README, docs page or results folder the generator cannot use; the message says which and what to do.
    Defined here, the one block module that imports no other (every block module may raise it without an import
    circle); :mod:`workflow.report.readme` re-exports it."""


def width_effect(src) -> str:
    """``width_effect.csv`` as a table: Algorithm 1's accuracy at each (data set, eps, width, precision) beside the
    paper's full-width value, FashionMNIST first."""
    t = src.csv("width_effect")
    t = t.assign(order=t.dataset != "fashionmnist").sort_values(["order", "dataset", "eps", "width", "precision"])
    return columns(t, [
        ("data set", "{dataset:dataset}"), ("eps", "{eps:eps}"),
        ("width", lambda r: width_label(r["width"], r["precision"])),
        ("test acc. ours", lambda r: acc(r["mean"], r["std"], int(r["n"]))),
        ("paper (full width)", lambda r: pm(r["paper_full_width"], r["paper_std"])),
        ("ours - paper", "{diff_to_paper:+.2f}")])


def full_width_cost(src) -> str:
    """What a full-width FashionMNIST run costs on these cores: the measured Algorithm 1 step of the paper's
    Inception (batch 250) at each thread count benchmarked (``bench_full_width_t<n>.json``), and that step times the
    paper's T (steps alone: evaluations and checkpoints add to it)."""
    from dirdp.presets import PRESETS

    steps = PRESETS["fashionmnist"].steps
    found = src.jsons("bench_full_width_t*.json", "python -m workflow bench --models inception --width 1 --threads <n> "
                      "--json-out ...")
    recs = sorted(((r["rows"][0], r["provenance"]) for _, r in found),
                  key=lambda x: x[0]["threads"])
    return table(["threads", "Algorithm 1 s/step (median)", f"T = {steps:,} steps (h)", "1-min load at its end",
                  "machine", "command"],
                 [[row["threads"], f"{row['algorithm1_s']:.2f} (of {row['reps']})",
                   f"{row['algorithm1_s'] * steps / 3600:.1f}", f"{prov['config']['load_average_1min_at_end']:.1f}",
                   prov["device"], f"`{prov['config']['command']}`"] for row, prov in recs])


def cpu_layout(src) -> str:
    """Each layout bench (``bench_layout*.json``, benchmarks/bench_layout.py): per layout of full-width runs on the
    cores (one run on all of them, one run per core, one run on one thread), the processes, threads each, the median
    s/step of a process and the steps a second summed over the processes, with the ratio that decides the layout."""
    rows = []
    for p, rec in src.jsons("bench_layout*.json", "python benchmarks/bench_layout.py --json-out ..."):
        prov, load = rec["provenance"], rec["load"]
        base = next(r["steps_per_s"] for r in rec["rows"] if r["layout"] == "one run, all cores")
        for r in rec["rows"]:
            rows.append([f"`{p.name}`", prov["device"], r["layout"], r["processes"], r["threads_each"],
                         f"{r['median_s_per_step']:.2f}", f"{r['steps_per_s']:.3f}", f"{r['steps_per_s'] / base:.2f}",
                         f"{100 * load['others_cpu_fraction']:.1f}%"])
    return table(["file", "machine", "layout", "processes", "threads each", "s/step a process (median)",
                  "steps/s, all processes", "over one run on all cores", "other processes' CPU"], rows)


def dpsgd_full_width(src) -> str:
    """Each DP-SGD step bench (``bench_dpsgd*.json``, benchmarks/bench_dpsgd.py): every variant's median s/step of the
    paper's Inception at its width and batch, and its ratio to Algorithm 1's (bf16 + channels_last, BatchNorm); the
    fastest DP-SGD variant in bold; a variant that failed says why."""
    out = []
    for p, rec in src.jsons("bench_dpsgd*.json", "python benchmarks/bench_dpsgd.py --json-out ..."):
        cfg, prov = rec["provenance"]["config"], rec["provenance"]
        head = (f"`{p.name}` ({prov['device']}, Inception at {cfg['width']:g}x, batch {cfg['batch']}, "
                f"{cfg['threads']} thread(s), median of {cfg['reps']} interleaved steps; `{cfg['command']}`)")
        rows = []
        for r in rec["rows"]:
            bold = "**" if r["variant"] == rec.get("fastest_dpsgd") else ""
            if r.get("median_s_per_step") is None:
                rows.append([r["variant"], "—", r.get("error", "failed")])
                continue
            rows.append([f"{bold}{r['variant']}{bold}", f"{r['median_s_per_step']:.2f}",
                         f"{bold}{r['over_algorithm1']:.2f}x{bold}"])
        out.append(head + "\n\n" + table(["variant", "s/step (median)", "over Algorithm 1"], rows))
    return "\n\n".join(out)


def cpu_precision(src) -> str:
    """Every CPU precision sweep of the profile (``bench_sweep*.json``, ``python -m workflow bench --sweep``) as tables:
    each machine and the load it ran under; per configuration, each machine's median s/step, its ratio to fp32 and
    its fraction of that machine's measured peak; the matmul peaks."""
    recs = [(p.name, rec)
            for p, rec in src.jsons("bench_sweep*.json", "python -m workflow bench --sweep --json-out ...")]
    machines = table(["file", "CPU", "avx512_bf16", "amx_bf16", "1-min load before",
                      "other processes' CPU while it ran", "command"],
                     [[f"`{name}`", rec["cpu"], "yes" if rec["avx512_bf16"] else "no", "yes" if rec["amx_bf16"] else "no",
                       f"{rec['load']['load_1min_before']:.2f}",
                       f"{100 * rec['load']['others_cpu_fraction']:.1f}% of {rec['load']['cpus']}",
                       f"`{rec['provenance']['config']['command']}`"] for name, rec in recs])
    cpus = [rec["cpu"] for _, rec in recs]

    def key(r):
        return (-r["width"], r["method"], r["threads"], r["precision"])

    rows = {key(r): r for _, rec in recs for r in rec["rows"]}
    configurations = []
    for k in sorted(rows):
        r, cells = rows[k], []
        for _, rec in recs:
            m = next((x for x in rec["rows"] if key(x) == k), None)
            cells += (["—"] * 3 if m is None else
                      [f"{m['median_s']:.3f}", f"{m['vs_fp32']:.2f}", f"{100 * m['fraction_of_peak']:.0f}%"])
        configurations.append([f"{r['width']:g}x", methods.label(r["method"]) if methods.is_ours(r["method"])
                               else "non-private", r["precision"].replace("+cl", " + channels_last"), r["threads"], *cells])
    threads = sorted({r["threads"] for _, rec in recs for r in rec["rows"]})  # a sweep's peaks: f"{precision}_t{threads}"

    def peak(rec, key):
        return "—" if key not in rec["peaks_gflops"] else f"{rec['peaks_gflops'][key]:.0f}"

    peaks = [[t, *(p for _, rec in recs for p in (peak(rec, f"fp32_t{t}"), peak(rec, f"bf16_t{t}")))] for t in threads]
    return "\n\n".join([
        machines,
        table(["width", "method", "precision", "threads",
               *(h for c in cpus for h in (f"{c}: s/step (median)", "vs fp32", "of its peak"))], configurations),
        table(["threads", *(h for c in cpus for h in (f"{c}: fp32 matmul peak (GFLOP/s)", "bf16 (GFLOP/s)"))], peaks)])
