"""The README's own generated blocks (see :mod:`workflow.report.readme`): what we found, per paper cell run here
(``results/<profile>/headline_cells.csv``, written by the headline notebook), and what the two commands take
(``results/timings.csv``, one row per measurement: scripts/time_main.sh times a command from a fresh clone and
writes its row)."""

from __future__ import annotations

import textwrap

import pandas as pd

from dirdp import methods
from dirdp.protocol import fmt_eps
from workflow.report import headline
from workflow.report import labels
from workflow.report.compare import PAPER_SEEDS
from workflow.report.markdown import columns, table
from workflow.report.labels import DATASETS as NAMES
from workflow.report.labels import acc, blank
from workflow.report.readme_campaign import ReadmeError

TIMINGS = ["command", "profile", "what", "wall_s", "processor", "measured_utc", "source"]


def object_name(obj: str) -> str:
    """A paper object's title ("table2_mnist" -> "Table 2", from ``OBJECTS``); anything else as it is."""
    from workflow.experiments import OBJECTS

    return OBJECTS[obj].title if obj in OBJECTS else obj


def _paper(mean, std, n) -> str:
    """The paper's value of a cell: "99.37 ± 0.06 (n = 5)"; "—" where it prints none."""
    return labels.pm(mean, std) + ("" if blank(mean) or blank(n) else f" (n = {int(n)})")


def _cell_row(r) -> list:
    """One row of ``headline_cells.csv`` as the findings tables print it."""
    interval = "—" if blank(r.interval) else labels.interval_long(r.interval, r.interval_df).replace("|", "\\|")
    return [object_name(r.object), NAMES.get(r.dataset, r.dataset), r.method, fmt_eps(float(r.eps)),
            labels.width(r.width, r.precision), acc(r.ours_mean, r.ours_std, int(r.n)),
            _paper(r.paper_mean, r.paper_std, r.paper_n), labels.diff_ci(r.diff, r.ci_low, r.ci_high), interval,
            "—" if blank(r.verdict) else labels.verdict(r.verdict, r.n)]


FINDINGS_HEAD = ["object", "data set", "method", "eps", "width", "ours", "paper", "ours - paper [95% interval]",
                 "interval", "verdict"]
NOT_RUN = "not run yet"  # a paper cell with no run at the paper's width


def _cells(src) -> pd.DataFrame:
    return src.csv("headline_cells", headline.CELL_COLUMNS, "headline")


def paper_cells(src, cells: pd.DataFrame) -> pd.DataFrame:
    """The paper's Algorithm-1 cells of every object ``cells`` has a row of (:func:`workflow.report.headline
    .paper_cells`), from those objects' tables (``<object>.csv``)."""
    from workflow.report.objects import COLUMNS

    return headline.paper_cells([src.csv(name, COLUMNS, "accuracy_vs_eps") for name in dict.fromkeys(cells.object)])


def findings(src) -> str:
    """The paper's cells at the paper's width (:data:`workflow.report.headline.FULL_WIDTH`), as
    ``headline_cells.csv`` gives them: every Algorithm-1 cell the paper prints for an object run here
    (:func:`paper_cells`, from the objects' tables), each with its full-width row (one per precision run), or one row
    saying it is not run yet; then any other method's full-width row. Each row: ours, the paper's value, ours -
    paper with its 95% interval (and what the interval is, :func:`workflow.report.labels.interval_long`: a
    confidence interval for a mean over n >= 2 seeds, a prediction interval for one run) and the verdict. The rows
    at reduced width are :func:`findings_reduced_width`'s."""
    t = _cells(src)
    paper = paper_cells(src, t)
    full = t[headline.full_width(t)]
    alg1 = methods.label(methods.ALG1)
    rows, shown = [], set()
    for obj in dict.fromkeys([*paper.object, *full.object]):
        for c in paper[paper.object == obj].itertuples():
            at = full[(full.object == obj) & (full.method == alg1) & (full.eps.astype(float) == c.eps)]
            if at.empty:
                rows.append([object_name(obj), NAMES.get(c.dataset, c.dataset), alg1, fmt_eps(c.eps),
                             f"{headline.FULL_WIDTH:g}x", NOT_RUN,
                             _paper(c.paper_mean, c.paper_std, PAPER_SEEDS), "—", "—", "—"])
            shown |= set(at.index)
            rows += [_cell_row(r) for r in at.itertuples()]
        rest = full[(full.object == obj) & ~full.index.isin(shown)]
        shown |= set(rest.index)
        rows += [_cell_row(r) for r in rest.itertuples()]
    return table(FINDINGS_HEAD, rows)


def findings_reduced_width(src) -> str:
    """Every row of ``headline_cells.csv`` below the paper's width (0.25x, 0.5x; Algorithm 1 and any other method
    run there), in the file's order, as :func:`findings` prints a row."""
    t = _cells(src)
    return table(FINDINGS_HEAD, [_cell_row(r) for r in t[~headline.full_width(t)].itertuples()])


def privacy_cost(src) -> str:
    """``privacy_cost.csv`` (:func:`workflow.report.headline.privacy_cost`) as a table: per data set and private
    eps, ours at eps = inf and at eps (full width), the cost (inf - eps) with its 95% Welch interval where both
    sides have n >= 2, the paper's own cost and ours - paper; a side not run yet at full width says so."""
    t = src.csv("privacy_cost", headline.PRIVACY_COST_COLUMNS, "headline")
    rows = []
    for r in t.itertuples():
        missing = r.status == "not_run"

        def side(mean, std, n):
            return acc(mean, std, int(n)) if n > 0 else NOT_RUN if missing else "—"

        cost = labels.cost_status(r) if blank(r.ours_cost) else labels.diff_ci(r.ours_cost, r.ci_low, r.ci_high)
        rows.append([NAMES.get(r.dataset, r.dataset), fmt_eps(float(r.eps)),
                     labels.width(r.width, r.precision), side(r.mean_inf, r.std_inf, r.n_inf),
                     side(r.mean_eps, r.std_eps, r.n_eps), cost,
                     "—" if blank(r.interval) else labels.cost_interval(r),
                     f"{r.paper_cost:+.2f} ({r.paper_inf:.2f} - {r.paper_eps:.2f})",
                     labels.num(r.diff, "+.2f")])
    return table(["data set", "eps", "width", "ours at eps = inf", "ours at eps",
                  "cost, ours (inf - eps) [95% interval]", "interval", "cost, paper (inf - eps)", "ours - paper"], rows)


def _not_run_why(table: pd.DataFrame) -> str:
    """Why an object's table has no row run here, as its CSV says: the ``why`` of its first cell not run."""
    why = table.why[table.status == "not_run"].dropna()
    return str(why.iloc[0]) if len(why) else "—"


def scope(src) -> str:
    """What of the paper is run here and what is not: one row per paper object (``OBJECTS``), its data set, how many
    rows of its table (``<object>.csv``) were run here, and, for an object with none, the reason its table gives; then
    the commands that fetch the data sets of those objects (``dirdp.data.SPECS``) and run them in the paper profile.
    Then the speed claim of Section 4.2.5 (``workflow.paper.EPOCH_SECONDS_*``) beside each per-step measurement of
    DP-SGD against Algorithm 1 on the paper's Inception (an epoch is the same number of steps for both, so the
    per-step ratio is the per-epoch one), with what the ratio says against the paper's: at the paper's width the
    ratio the figure ``dpsgd_step_cost`` draws (``dpsgd_step_cost.csv``: each method at its fastest implementation
    here) where the profile has it, else ``bench_baselines*.json``'s; at other widths ``bench_baselines*.json``'s."""
    from dirdp import data
    from workflow import paper
    from workflow.experiments import OBJECTS

    rows, absent = [], []
    for name, obj in OBJECTS.items():
        t = src.csv(name, ["origin", "status", "why"], "accuracy_vs_eps")
        n = int((t.origin == "here").sum())
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
    found = src.jsons("bench_baselines*.json", "python -m workflow bench --baselines --json-out ...")
    measured = []  # (ratio, model, threads, processor, file)
    cost = src.folder / "dpsgd_step_cost.csv"
    if cost.exists():  # the figure's comparison at the paper's width: each method at its fastest here
        t = src.csv("dpsgd_step_cost")
        alg1 = t[(t.family == methods.ALG1) & (t.over_algorithm1 == 1.0)].iloc[0]  # the reference of every ratio
        for r in t[t.fastest_dpsgd.map(labels.flag)].itertuples():
            measured.append((r.over_algorithm1, f"Inception at {r.width:g}x, batch {r.batch}; each method's fastest "
                             f"step here (`{alg1.variant}`, `{r.variant}`)", r.threads, r.device,
                             f"`{cost.name}` ([figure](figures/{src.folder.name}/dpsgd_step_cost.png))"))
    for path, rec in found:
        measured += [(r["dpsgd_over_algorithm1"], f"Inception at {r['width']:g}x, batch {r['batch']}, GroupNorm, fp32",
                      r["threads"], rec["provenance"]["device"], f"`{path.name}`")
                     for r in rec["rows"] if "dpsgd_s" in r and r["model"] == "inception"
                     and not (measured and r["width"] == 1.0)]
    if not measured:
        raise ReadmeError(f"{src.folder}: no Inception row with DP-SGD in bench_baselines*.json")
    rows = []
    for i, (ratio, model, threads, device, file) in enumerate(measured):
        claim = ([f"{ours} trains an epoch about twice as fast as {dpsgd}",
                  f"{claimed:.2f} ({paper.EPOCH_SECONDS_DPSGD:g} s / {paper.EPOCH_SECONDS_ALG1:g} s: "
                  f"{paper.EPOCH_SETTING})"] if i == 0 else ["", ""])
        reading = (f"{ours} faster by more than the paper's ratio" if round(ratio, 2) > round(claimed, 2) else
                   f"{ours} faster, by no more than the paper's ratio" if ratio > 1 else f"{ours} not faster")
        rows.append(claim + [f"**{ratio:.2f}**", model, str(threads), device, file, reading])
    out += ["", table(["claim (Section 4.2.5)", f"the paper: {dpsgd} / {ours}, an epoch", f"ours: {dpsgd} / {ours}, a step",
                       "model", "threads", "processor", "file", "reading"], rows)]
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
    t = src.plain_csv("timings.csv", TIMINGS, "scripts/time_main.sh")

    def text(field):
        return lambda r: "—" if blank(r[field]) else str(r[field])

    return columns(t, [
        ("command", "`{command}`"), ("profile", text("profile")), ("what", "{what}"),
        ("wall time", lambda r: "not measured yet" if blank(r["wall_s"]) else _duration(float(r["wall_s"]))),
        ("processor", text("processor")), ("measured (UTC)", text("measured_utc")), ("source", text("source"))])


def precision(src) -> str:
    """The precision the cpu and quick profiles train Algorithm 1 in, and why: the validation
    (``precision_validation.csv``: bf16 - fp32 with its 95% interval, n and the verdict against the margin) and, per
    processor a sweep ran on (``bench_sweep*.json``), the full-width Algorithm-1 step at two threads in fp32 and in
    bf16 + channels_last, their ratio and the adopted configuration's fraction of that machine's bf16 peak."""
    t = src.csv("precision_validation", ["row", "n", "mean", "ci_lo", "ci_hi", "margin", "verdict"])
    by = {r.row: r for r in t.itertuples()}
    d = by.get("bf16 - fp32")
    if d is None or blank(d.ci_lo):
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
