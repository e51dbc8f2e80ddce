"""README blocks of the CPU evidence campaign (issue 14): accuracy against width at FashionMNIST, and what the
seeds that ran can and cannot tell apart. Every number comes from ``results/<profile>/width_effect.csv`` and the
run JSONs; nothing here is typed by hand."""

from __future__ import annotations

import pandas as pd

from dirdp.protocol import fmt_eps


class ReadmeError(ValueError):
    """A README or results folder the README generator cannot use; the message says which and what to do. Defined
    here, the one README module that imports no other (every block module may raise it without an import circle);
    :mod:`dirdp.report.readme` re-exports it."""


def acc(mean: float, std: float | None, n: int) -> str:
    """Mean over seeds with its spread and n: "85.30 (n = 1)", "85.10 ± 0.21 (n = 3)"."""
    mean = round(mean, 6)  # 85.07499999999999 and 85.075 (the same mean, read from two files) print alike
    if n >= 2 and std is not None and not pd.isna(std):
        return f"{mean:.2f} ± {std:.2f} (n = {n})"
    return f"{mean:.2f} (n = {n})"


def _paper(row) -> str:
    if pd.isna(row.paper_full_width):
        return "—"
    return f"{row.paper_full_width:.2f}" + ("" if pd.isna(row.paper_std) else f" ± {row.paper_std:.2f}")


def _list(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in sorted(values))


def width_reading(eps: float, narrow: tuple[float, list[float]], wide: tuple[float, list[float]]) -> str:
    """One sentence: where the wider width's runs land against the narrower width's seeds. With n = 1 on either
    side nothing is tested (one run claims nothing more); with n >= 2 on both, Welch's t-test on the two means."""
    (w0, a), (w1, b) = narrow, wide
    mean0, mean1 = sum(a) / len(a), sum(b) / len(b)
    text = (f"eps = {fmt_eps(eps)}: {w0:g}x gives {_list(a)} (n = {len(a)}), {w1:g}x gives {_list(b)} "
            f"(n = {len(b)}); the means differ by {mean1 - mean0:+.2f}")
    if len(a) >= 2 and len(b) >= 2:
        from scipy import stats
        res = stats.ttest_ind(b, a, equal_var=False)
        return text + f" (Welch t = {res.statistic:.2f}, p = {res.pvalue:.3g})."
    spread = a if len(a) >= 2 else b
    if len(spread) < 2:
        return text + ": one run at each width, no spread to compare with (n = 1 claims nothing more)."
    far, where = single_against_seeds((b if spread is a else a)[0], spread)
    return (text + f", {far} the seed std ({pd.Series(spread).std():.2f}) of the width with n >= 2, and the "
            f"single run lies {where} that width's range: n = 1 at one width cannot tell a width effect from "
            "the seed-to-seed spread.")


def single_against_seeds(value: float, seeds: list[float]) -> tuple[str, str]:
    """Where one run lands against n >= 2 runs of another setting (the one rule for n = 1 against seeds): how far
    from their mean in their seed std ("1.23 times"), and "inside" or "outside" their range. Nothing is tested."""
    if len(seeds) < 2:
        raise ValueError(f"need two runs or more to have a spread; found {len(seeds)}.")
    s = pd.Series(seeds)
    return (f"{abs(value - s.mean()) / s.std():.2f} times",
            "inside" if min(seeds) <= value <= max(seeds) else "outside")


def privacy_cost_reading(t: pd.DataFrame, private: float = 2.0) -> str | None:
    """One sentence from the width table (``width_effect.csv``: eps, width, mean, std, n): at each width that ran
    both eps = ``private`` and eps = inf, the privacy cost (the non-private mean minus the private one), so that what
    width does to the model (eps = inf) is told apart from what it does to the cost of privacy; and, with two widths
    or more, how that cost moves with width. Welch's t-test (from the means, stds and n) only where both eps have
    n >= 2 at a width; across widths nothing is tested. None where no width ran both."""
    from scipy import stats

    prec = t["precision"] if "precision" in t else pd.Series("fp32", index=t.index)
    # a "width" here is (width, precision): a privacy cost is a difference within one precision
    rows = {(float(r.eps), (float(r.width), p)): r for r, p in zip(t.itertuples(), prec)}
    widths = sorted(w for e, w in rows if e == private and (float("inf"), w) in rows)
    if not widths:
        return None

    def name(w):
        return f"{w[0]:g}x" + (", bf16" if w[1] == "bf16" else "")

    gaps, parts = {}, []
    for w in widths:
        inf, p = rows[(float("inf"), w)], rows[(private, w)]
        gaps[w] = inf.mean - p.mean
        part = f"{gaps[w]:+.2f} points at {name(w)} (n = {int(inf.n)} at eps = inf, n = {int(p.n)} at eps = {fmt_eps(private)}"
        if inf.n >= 2 and p.n >= 2:
            res = stats.ttest_ind_from_stats(inf.mean, inf.std, int(inf.n), p.mean, p.std, int(p.n), equal_var=False)
            part += f"; Welch t = {res.statistic:.2f}, p = {res.pvalue:.3g}"
        parts.append(part + ")")
    text = f"Privacy cost (eps = inf minus eps = {fmt_eps(private)}, at one width): " + ", ".join(parts)
    paper = (rows[(float("inf"), widths[0])].paper_full_width, rows[(private, widths[0])].paper_full_width)
    if not any(pd.isna(v) for v in paper):
        text += f" (the paper's, at full width: {paper[0] - paper[1]:+.2f})"
    if len(widths) >= 2:
        text += (f"; from {name(widths[0])} to {name(widths[-1])} the cost moves by "
                 f"{gaps[widths[-1]] - gaps[widths[0]]:+.2f} points, not tested (a difference of two gaps")
        ones = [name(w) for w in widths if min(rows[(float('inf'), w)].n, rows[(private, w)].n) < 2]
        text += (f", with n = 1 in a term at {', '.join(ones)}: it claims nothing more)." if ones else ").")
    else:
        text += f"; only {name(widths[0])} has run at both eps so far."
    return text


def width_effect(src) -> str:
    """The table of accuracy against width (FashionMNIST, eps = 2 and inf) and, per eps with two widths or more,
    where each wider width lands against the narrowest one's seeds."""
    t = src.csv("width_effect").sort_values(["eps", "width"])
    out = ["| FashionMNIST, eps | width | test acc. ours | paper (full width) | ours - paper |", "|---|---|---|---|---|"]
    if "precision" not in t:  # a table made before runs had a precision: every run was fp32
        t["precision"] = "fp32"
    for row in t.itertuples():
        bf16 = ", bf16" if row.precision == "bf16" else ""
        out.append(f"| {fmt_eps(row.eps)} | {row.width:g}x{bf16} | {acc(row.mean, row.std, int(row.n))} | "
                   f"{_paper(row)} | {row.diff_to_paper:+.2f} |")
    readings = []
    for eps, g in t[t.precision == "fp32"].groupby("eps", sort=True):  # the width readings compare fp32 runs
        widths = sorted(g.width)
        tests = {w: [r["test"] for r in src.runs_of("alg1", dataset="fashionmnist", eps=eps, width=w,
                                                   precision="fp32")] for w in widths}
        readings += [width_reading(eps, (widths[0], tests[widths[0]]), (w, tests[w])) for w in widths[1:]
                     if tests[widths[0]] and tests[w]]
        if len(widths) == 1:
            readings.append(f"eps = {fmt_eps(eps)}: only {widths[0]:g}x has run so far.")
    cost = privacy_cost_reading(t)
    if cost:
        readings.append(cost)
    return "\n".join(out) + ("\n\n" + "\n".join(f"- {r}" for r in readings) if readings else "")


def full_width_cost(src) -> str:
    """What a full-width FashionMNIST run costs on these cores: the measured Algorithm 1 step of the paper's
    Inception (batch 250) at each thread count benchmarked (``bench_full_width_t<n>.json``), times the paper's T."""
    from dirdp.presets import PRESETS

    steps = PRESETS["fashionmnist"].steps
    found = sorted(src.folder.glob("bench_full_width_t*.json"))
    if not found:
        raise ReadmeError(f"{src.folder}: no bench_full_width_t<n>.json (make one with python -m dirdp bench "
                          "--models inception --width 1 --threads <n> --json-out ...)")
    recs = [src.json(p.stem) for p in found]
    rows = sorted(((r["rows"][0], r["provenance"]) for r in recs), key=lambda x: x[0]["threads"])
    each = "; ".join(f"{row['algorithm1_s']:.2f} s on {row['threads']} thread{'s' if row['threads'] > 1 else ''} "
                     f"(`{prov['config']['command']}`, 1-minute load average {prov['config']['load_average_1min_at_end']:.1f} "
                     "at its end)" for row, prov in rows)
    hours = " and ".join(f"{row['algorithm1_s'] * steps / 3600:.1f} h on {row['threads']}" for row, _ in rows)
    text = (f"One Algorithm 1 step of the full-width Inception (batch 250, {rows[0][1]['device']}, median of "
            f"{rows[0][0]['reps']}) takes {each}. The paper's T = {steps:,} such steps are {hours} thread(s), steps "
            "alone (the evaluations and checkpoints add to it)")
    if len(rows) > 1:
        text += (f"; {rows[-1][0]['threads']} threads run a step {rows[0][0]['algorithm1_s'] / rows[-1][0]['algorithm1_s']:.2f}x "
                 "as fast as 1")
    return text + "."


def cpu_precision(src) -> str:
    """The CPU precision sweep (``bench_sweep.json``, ``python -m dirdp bench --sweep``) as tables: the machine and the
    load it ran under; each configuration's median s/step, its ratio to fp32 and its fraction of the measured peak;
    the matmul peaks."""
    rec = src.json("bench_sweep")
    load, cmd = rec["load"], rec["provenance"]["config"]["command"]
    out = ["| CPU | avx512_bf16 | amx_bf16 | 1-min load before | other processes' CPU while it ran | command |",
           "|---|---|---|---|---|---|",
           f"| {rec['cpu']} | {'yes' if rec['avx512_bf16'] else 'no'} | {'yes' if rec['amx_bf16'] else 'no'} | "
           f"{load['load_1min_before']:.2f} | {100 * load['others_cpu_fraction']:.1f}% of {load['cpus']} | `{cmd}` |",
           "", "| width | method | precision | threads | s/step (median) | vs fp32 | GFLOP/s | of its precision's peak |",
           "|---|---|---|---|---|---|---|---|"]
    rows = sorted(rec["rows"], key=lambda r: (-r["width"], r["method"], r["threads"], r["precision"]))
    for r in rows:
        out.append(f"| {r['width']:g}x | {'Algorithm 1' if r['method'] == 'alg1' else 'non-private'} | "
                   f"{r['precision'].replace('+cl', ' + channels_last')} | {r['threads']} | {r['median_s']:.3f} | "
                   f"{r['vs_fp32']:.2f} | {r['gflops']:.0f} | {100 * r['fraction_of_peak']:.0f}% |")
    threads = sorted({int(k.rsplit("_t", 1)[1]) for k in rec["peaks_gflops"]})
    out += ["", "| threads | fp32 matmul peak (GFLOP/s) | bf16 matmul peak (GFLOP/s) |", "|---|---|---|"]
    out += [f"| {t} | {rec['peaks_gflops'][f'fp32_t{t}']:.0f} | {rec['peaks_gflops'][f'bf16_t{t}']:.0f} |"
            for t in threads]
    return "\n".join(out)
