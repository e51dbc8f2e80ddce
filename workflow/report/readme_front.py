"""The README's own generated blocks (see :mod:`workflow.report.readme`): what we found, per paper cell run here
(``results/<profile>/headline_cells.csv``, written by the headline notebook), and what the two commands take
(``results/timings.csv``, one row per measurement: scripts/time_main.sh times a command from a fresh clone and
writes its row)."""

from __future__ import annotations

import re
import textwrap

import pandas as pd

from dirdp import methods
from dirdp.protocol import fmt_eps
from workflow.report.compare import interval_name
from workflow.report.markdown import table
from workflow.report.readme_campaign import NAMES, ReadmeError, acc

CELLS = ["object", "dataset", "method", "eps", "width", "precision", "n", "ours_mean", "ours_std", "paper_mean",
         "paper_std", "paper_n", "diff", "ci_low", "ci_high", "interval", "verdict"]
TIMINGS = ["command", "profile", "what", "wall_s", "processor", "measured_utc", "source"]


def _columns(t: pd.DataFrame, need: list[str], path: str) -> None:
    missing = [c for c in need if c not in t.columns]
    if missing:
        raise ReadmeError(f"{path}: column(s) {missing} missing; expected {need}")


def object_name(obj: str) -> str:
    """"table2_mnist" -> "Table 2", "fig3a_fashionmnist" -> "Figure 3a"; anything else as it is."""
    m = re.match(r"(table|fig)(\d+[a-z]?)_", obj)
    return f"{'Table' if m[1] == 'table' else 'Figure'} {m[2]}" if m else obj


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and pd.isna(value))


def findings(src) -> str:
    """One row per paper cell run here: the paper's value, ours, the width, n, ours - paper with its 95% interval
    (and what the interval is, :func:`workflow.report.compare.interval_name`: a confidence interval for a mean over n >= 2
    seeds, a prediction interval for one run) and the verdict, as ``headline_cells.csv`` gives them."""
    t = src.csv("headline_cells")
    _columns(t, CELLS, f"{src.folder}/headline_cells.csv")
    rows = []
    for r in t.itertuples():
        width = f"{r.width:g}x" + (", bf16" if r.precision == "bf16" else "")
        paper = "—" if _blank(r.paper_mean) else (
            f"{r.paper_mean:.2f}" + ("" if _blank(r.paper_std) else f" ± {r.paper_std:.2f}")
            + ("" if _blank(r.paper_n) else f" (n = {int(r.paper_n)})"))
        diff = "—" if _blank(r.diff) else (
            f"{r.diff:+.2f}" + ("" if _blank(r.ci_low) else f" [{r.ci_low:+.2f}, {r.ci_high:+.2f}]"))
        interval = "—" if _blank(r.interval) else interval_name(r.interval).replace("|", "\\|")
        rows.append([object_name(r.object), NAMES.get(r.dataset, r.dataset), r.method, fmt_eps(float(r.eps)), width,
                     acc(r.ours_mean, r.ours_std, int(r.n)), paper, diff, interval,
                     "—" if _blank(r.verdict) else r.verdict])
    return table(["object", "data set", "method", "eps", "width", "ours", "paper", "ours - paper [95% interval]",
                  "interval", "verdict"], rows)


def _not_run_why(table: pd.DataFrame) -> str:
    """Why an object's table has no row run here, as its CSV says: the reason of its first "not run here (...)"."""
    for status in table.status.dropna():
        m = re.match(r"not run here \((.*)\)$", str(status))
        if m:
            return m[1]
    return "—"


def scope(src) -> str:
    """What of the paper is run here and what is not: one row per paper object (``OBJECTS``), its data set, how many
    rows of its table (``<object>.csv``) were run here, and, for an object with none, the reason its table gives; then
    the commands that fetch the data sets of those objects (``dirdp.data.SPECS``) and run them in the paper profile.
    Then the speed claim of Section 4.2.5 (``workflow.paper.EPOCH_SECONDS_*``) beside each per-step measurement of
    DP-SGD against Algorithm 1 on the paper's Inception (``bench_baselines*.json``; an epoch is the same number of steps
    for both, so the per-step ratio is the per-epoch one), with what the ratio says against the paper's."""
    from dirdp import data
    from workflow import paper
    from workflow.experiments import OBJECTS

    rows, absent = [], []
    for name, obj in OBJECTS.items():
        t = src.csv(name)
        _columns(t, ["label", "status"], f"{src.folder}/{name}.csv")
        n = int((t.label == "run here").sum())
        if n == 0 and obj.dataset not in absent:
            absent.append(obj.dataset)
        rows.append([obj.title, NAMES.get(obj.dataset, obj.dataset), n if n else "none", "—" if n else _not_run_why(t)])
    out = [table(["paper object", "data set", "rows run here", "why not here"], rows)]
    if absent:
        sets = ",".join(sorted(absent))
        said = (f"Where the data can be fetched and a CUDA GPU is at hand, the objects on "
                f"{', '.join(NAMES.get(d, d) for d in sorted(absent))} in the paper's protocol: fetch their data sets "
                "into `./data` (the default data root), then run the paper profile on them.")
        out += ["", *textwrap.wrap(said, 118), "", "```bash"]
        out += [data.get_spec(d).fetch.replace("<root>", "data") for d in sorted(absent)]
        out += [f"snakemake --cores all --resources gpu=1 --configfile config/paper.yaml --config 'datasets=[{sets}]'",
                "```"]
    ours, dpsgd = methods.label(methods.ALG1), methods.label(methods.DPSGD)
    claimed = paper.EPOCH_SECONDS_DPSGD / paper.EPOCH_SECONDS_ALG1
    found = sorted(src.folder.glob("bench_baselines*.json"))
    if not found:
        raise ReadmeError(f"{src.folder}: no bench_baselines*.json (python -m dirdp bench --baselines --json-out ...)")
    first, rows = True, []
    for path in found:
        rec = src.json(path.stem)
        for r in (r for r in rec["rows"] if "dpsgd_s" in r and r["model"] == "inception"):
            claim = ([f"{ours} trains an epoch about twice as fast as {dpsgd}",
                      f"{claimed:.2f} ({paper.EPOCH_SECONDS_DPSGD:g} s / {paper.EPOCH_SECONDS_ALG1:g} s: "
                      f"{paper.EPOCH_SETTING})"] if first else ["", ""])
            ratio = r["dpsgd_over_algorithm1"]
            reading = (f"{ours} faster by more than the paper's ratio" if round(ratio, 2) > round(claimed, 2) else
                       f"{ours} faster, by no more than the paper's ratio" if ratio > 1 else f"{ours} not faster")
            cells = claim + [f"**{ratio:.2f}**", f"Inception at {r['width']:g}x, batch {r['batch']}",
                             str(r["threads"]), rec["provenance"]["device"], f"`{path.name}`", reading]
            rows.append(cells)
            first = False
    if first:
        raise ReadmeError(f"{src.folder}: no Inception row with DP-SGD in bench_baselines*.json")
    out += ["", table(["claim (Section 4.2.5)", f"the paper: {dpsgd} / {ours}, an epoch", f"ours: {dpsgd} / {ours}, a step",
                       "model (GroupNorm)", "threads", "processor", "file", "reading"], rows)]
    return "\n".join(out)


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min ({seconds:,.0f} s)"
    return f"{seconds / 3600:.1f} h ({seconds:,.0f} s)"


def timings(src) -> str:
    """``results/timings.csv`` as a table: each command, the profile it ran, what it covers, the wall time (or "not
    measured yet" where the row has none), the processor, when and the source of the measurement."""
    t = src.plain_csv("timings.csv")
    _columns(t, TIMINGS, f"{src.results}/timings.csv")
    rows = []
    for r in t.itertuples():
        wall = "not measured yet" if _blank(r.wall_s) else _duration(float(r.wall_s))
        rows.append([f"`{r.command}`", "—" if _blank(r.profile) else r.profile, r.what, wall,
                     *("—" if _blank(v) else str(v) for v in (r.processor, r.measured_utc, r.source))])
    return table(["command", "profile", "what", "wall time", "processor", "measured (UTC)", "source"], rows)


def precision(src) -> str:
    """The precision the cpu and quick profiles train Algorithm 1 in, and why: the validation
    (``precision_validation.csv``: bf16 - fp32 with its 95% interval, n and the verdict against the margin) and, per
    processor a sweep ran on (``bench_sweep*.json``), the full-width Algorithm-1 step at two threads in fp32 and in
    bf16 + channels_last, their ratio and the adopted configuration's fraction of that machine's bf16 peak."""
    t = src.csv("precision_validation")
    _columns(t, ["row", "n", "mean", "ci_lo", "ci_hi", "margin", "verdict"], f"{src.folder}/precision_validation.csv")
    by = {r.row: r for r in t.itertuples()}
    d = by.get("bf16 - fp32")
    if d is None or _blank(d.ci_lo):
        raise ReadmeError(f"{src.folder}/precision_validation.csv: no decided 'bf16 - fp32' row (its runs missing?)")
    validation = table(["MNIST eps = 1, 0.25x, paper protocol", "fp32", "bf16 + channels_last", "bf16 - fp32 [95% CI]",
                        "verdict"],
                       [["test accuracy (%)", acc(by["fp32"].mean, by["fp32"].std, int(by["fp32"].n)),
                         acc(by["bf16"].mean, by["bf16"].std, int(by["bf16"].n)),
                         f"{d.mean:+.2f} [{d.ci_lo:+.2f}, {d.ci_hi:+.2f}]", d.verdict]])
    machines = []
    for path in sorted(src.folder.glob("bench_sweep*.json")):
        rec = src.json(path.stem)
        rows = {r["precision"]: r for r in rec["rows"]
                if r["width"] == 1.0 and methods.is_ours(r["method"]) and r["threads"] == 2}
        if "fp32" in rows and "bf16+cl" in rows:
            a, b = rows["fp32"], rows["bf16+cl"]
            machines.append([rec["cpu"], f"{a['median_s']:.2f}", f"{b['median_s']:.2f}", f"**{b['vs_fp32']:.2f}x**",
                             f"{100 * b['fraction_of_peak']:.0f}%", f"`{path.name}`"])
    return validation + "\n\n" + table(["processor (full-width Inception, Algorithm 1, batch 250, 2 threads: median "
                                         "s/step)", "fp32", "bf16 + channels_last", "ratio",
                                         "of that machine's bf16 peak", "sweep"], machines)
