"""The generated blocks of the README and of ``docs/`` (see :mod:`workflow.report.readme`): each function here makes one
block, a table (or a single value) of one profile's result files, and nothing in a block is typed by hand. The
README's own blocks are in :mod:`workflow.report.readme_front`, the campaign's in :mod:`workflow.report.readme_campaign`,
the audit's in :mod:`workflow.report.readme_audit`.

Formats: accuracies to 2 decimals, mean +- sample std over seeds with n beside it (n = 1: no std), epsilons as the
files give them, wall times in minutes.
"""

from __future__ import annotations

import json
import math
from functools import cached_property
from pathlib import Path
from typing import Callable, NamedTuple

import pandas as pd

from dirdp import methods
from dirdp.presets import get_preset
from dirdp.protocol import fmt_eps
from dirdp.provenance import read_csv
from workflow.report import labels
from workflow.report.markdown import columns, table
from workflow.report.labels import DATASETS as NAMES
from workflow.report.labels import acc
from workflow.report.readme_campaign import ReadmeError

TABLES = {"mnist": "table2_mnist", "fashionmnist": "table4_fashionmnist"}


class Sources:
    """The files of one profile, each read once: ``results/<profile>/<name>.csv`` and ``.json``, its executed
    notebooks' metadata, and its run JSONs (through :func:`dirdp.run_result.read_run`, the one reader of a run
    file)."""

    def __init__(self, results: Path, profile: str):
        self.results, self.profile = Path(results), profile
        self.folder = self.results / profile
        self.runs_dir = self.results / "runs" / profile
        self._csv: dict[str, pd.DataFrame] = {}

    def _path(self, relative: str, folder: Path | None = None) -> Path:
        path = (folder or self.folder) / relative
        if not path.is_file():
            raise ReadmeError(f"{path}: missing; the README's and docs' numbers come from it (run the "
                              f"'{self.profile}' profile's DAG, or `--config train=false` to rebuild tables from the runs)")
        return path

    def csv(self, name: str, need: list[str] = (), made_by: str = "") -> pd.DataFrame:
        """``<name>.csv`` of the profile; a ReadmeError where it lacks a column of ``need``, saying to rerun the
        notebook ``made_by`` (default: the one of the same name) for this profile."""
        if name not in self._csv:
            try:
                self._csv[name] = read_csv(self._path(f"{name}.csv"))[0]
            except ValueError as err:  # no provenance line
                raise ReadmeError(str(err)) from None
        return _need(self._csv[name], need, self.folder / f"{name}.csv",
                     f"rerun the notebook {made_by or name} for the '{self.profile}' profile")

    def plain_csv(self, relative: str, need: list[str] = (),
                  made_by: str = "the command that makes it") -> pd.DataFrame:
        """A CSV of the results folder itself (not a profile's), e.g. ``timings.csv``, which ``made_by`` writes;
        '#' lines are comments."""
        return _need(pd.read_csv(self._path(relative, self.results), comment="#"), need, self.results / relative,
                     f"{made_by} writes it")

    def json(self, name: str) -> dict:
        return json.loads(self._path(f"{name}.json").read_text())

    def jsons(self, pattern: str, make: str) -> list[tuple[Path, dict]]:
        """Every ``pattern`` file of the profile (a benchmark's JSONs), sorted: (path, record); a ReadmeError naming
        ``make``, the command that makes one, where there is none."""
        found = sorted(self.folder.glob(pattern))
        if not found:
            raise ReadmeError(f"{self.folder}: no {pattern} (make one with {make})")
        return [(p, self.json(p.stem)) for p in found]

    @cached_property
    def runs(self) -> list[dict]:
        from dirdp.run_result import read_run
        from workflow.report.runs import run_files
        return [read_run(p) for p in run_files(self.runs_dir)]

    def runs_of(self, method: str, **match) -> list[dict]:
        """The runs of ``method`` whose fields equal ``match``; Algorithm 1's with the paper's BatchNorm unless
        ``norm`` is given (a GroupNorm run is another model)."""
        if methods.spec(method).norm is None:  # its model's norm is the run's --norm (Algorithm 1's)
            match.setdefault("norm", "batch")
        return [r for r in self.runs if r["method"] == method and all(r[k] == v for k, v in match.items())]


def _need(t: pd.DataFrame, need: list[str], path: Path, what_to_do: str) -> pd.DataFrame:
    missing = [c for c in need if c not in t.columns]
    if missing:
        raise ReadmeError(f"{path}: column(s) {missing} missing; expected {list(need)} ({what_to_do})")
    return t


def minutes(seconds: list[float]) -> str:
    if not seconds:
        return "—"
    lo, hi = min(seconds) / 60, max(seconds) / 60
    return f"{lo:.0f} min" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} min"


# --- Table 7 -------------------------------------------------------------------------------------------------

def table7(src: Sources) -> str:
    """The cells of Table 7 whose printed (rounded) r*, run as printed, certifies more than its eps, and the cells
    no r > 0 certifies at the order cap (``table7.csv``)."""
    t = src.csv("table7")
    over = t[t.paper_rstar.notna() & (t.eps_at_paper_rstar > t.eps)]
    shown = pd.concat([over, t[t.status == "infeasible"]]).sort_values(["dataset", "eps"])
    return columns(shown.assign(status=[labels.rstar_status(r) for r in shown.itertuples()]), [
        ("data set", "{dataset:dataset}"), ("eps", "{eps:eps}"), ("r* (Eq. 1, ours)", lambda r: labels.num(r["rstar"], ".6f")),
        ("eps certified by ours", lambda r: labels.num(r["certified_eps"], ".4f")),
        ("r* printed", lambda r: labels.num(r["paper_rstar"], ".3f")),
        ("eps certified by the printed r*", lambda r: labels.num(r["eps_at_paper_rstar"], ".4f")), ("status", "{status}")])


def table7_high_orders(src: Sources) -> str:
    """``table7_high_orders.csv``: the infeasible cells of Table 7 with RDP orders beyond the cap."""
    return columns(src.csv("table7_high_orders"), [
        ("data set", "{dataset:dataset}"), ("eps", "{eps:eps}"), ("floor (orders <= 256)", "{floor:.3f}"),
        ("the floor holds for order caps up to", "{floor_holds_to_order:,}"),
        ("first order certifying", "{first_order_certifying:,}"), ("order", "{order:,}"),
        ("eps at r = 3e-5 there", "{eps_at_r_3e5:.3f}"), ("largest r certifying eps there", "{r_max_at_order:.2g}"),
        ("kappa there (s_y = 0.9)", "{kappa_at_r_max:.1e}"),
        ("kappa at the eps = 1 r*", "{kappa_at_rstar_eps1:.4f} (r* = {rstar_eps1:.4f})")])


# --- Runs made here ------------------------------------------------------------------------------------------

def _model(r: dict) -> str:
    """Width, norm and precision; the model's name where it is not the method's usual one (the one-run audit's tanh
    CNN), and the canaries added to the training set of a one-run audit's run."""
    usual = methods.spec(r["method"]).model or get_preset(r["dataset"]).model
    name = "" if r["model"] in (None, usual) else labels.MODELS.get(r["model"], r["model"]) + ", "
    return (name + f"{r['width']:g}x" + (", GroupNorm" if r["norm"] == "group" else "")
            + (", bf16" if r["precision"] == "bf16" else "") + (f", + {r['canaries']:,} canaries" if r["canaries"] else ""))


def runs_alg1(src: Sources) -> str:
    """One row per Algorithm 1 run of the profile (its result JSON): what ran, r* and the certified eps, the final
    test accuracy and the best one along the run, the wall time and the processors it trained on (a run resumed on
    another machine has a wall time summed over both: :func:`dirdp.run_result.devices`)."""
    runs = sorted((r for r in src.runs if methods.is_ours(r["method"])),
                  key=lambda r: (r["dataset"] != "mnist", r["eps"], r["width"], r["norm"], r["precision"], r["seed"]))
    rows = []
    for r in runs:
        best = max(r["curve"], key=lambda p: p[1]) if r["curve"] else None
        cert = r["certified_eps"]
        rows.append([NAMES[r["dataset"]], fmt_eps(r["eps"]), _model(r), r["seed"], labels.num(r["rstar"], ".6f"),
                     "inf" if cert is None or math.isinf(cert) else f"{cert:.4f}", f"{r['test']:.2f}",
                     "—" if best is None else f"{best[1]:.2f} ({best[0]:,})", minutes([r["wall_time_s"]]),
                     labels.machine(r["device"])])
    return table(["data set", "eps", "model", "seed", "r*", "certified eps", "test acc.", "best along the run (step)",
                  "wall time", "trained on"], rows)


# --- Baselines -----------------------------------------------------------------------------------------------

MODEL = {methods.TEMPERED: "tempered-sigmoid DP-SGD (Papernot CNN, full size)",  # the baselines' rows, in order
         methods.LATENT: "LATENT (frozen conv + FC on UER bits)",
         methods.DPSGD: "DP-SGD, Opacus (Inception, {w:g}x, GroupNorm)"}


def _privacy(r: dict) -> str:
    if methods.is_local(r["method"]):
        text = f"claimed {fmt_eps(r['eps'])}-LDP per record (exact: {r['eps_ldp_worst_case']:,.0f}"
        return text + (f"; pair median {r['eps_pair_median']:,.0f}" if r.get("eps_pair_median") else "") + \
            f"; {r['latent_string_length']:,} bits)"
    return (f"({fmt_eps(r['eps'])}, 1e-5): RDP {r['certified_eps']:.3f}, PRV {r['epsilon_prv']:.3f}; "
            f"sigma {r['noise_multiplier']:.3f}")


def baselines(src: Sources) -> str:
    rows = []
    for method in MODEL:
        for r in sorted(src.runs_of(method), key=lambda r: (r["dataset"] != "mnist", r["eps"], r["seed"])):
            alg1 = [a["test"] for a in src.runs_of(methods.ALG1, dataset=r["dataset"], eps=r["eps"], width=0.25,
                                                   precision="fp32")]
            paper = "—"
            if method == methods.DPSGD:  # the paper's DP-SGD column
                t = src.csv(TABLES[r["dataset"]])
                cell = t[(t.method == methods.label(method)) & (t.origin == "here") & (t.eps == r["eps"])]
                if len(cell):
                    row = next(cell.itertuples())
                    paper = f"{labels.pm(row.paper, row.paper_std)} ({row.diff:+.2f})"
            mean = acc(sum(alg1) / len(alg1), pd.Series(alg1).std(), len(alg1)) if alg1 else "—"
            canaries = f", + {r['canaries']:,} canaries (one-run audit)" if r["canaries"] else ""
            rows.append([MODEL[method].format(w=r["width"]) + canaries, NAMES[r["dataset"]], fmt_eps(r["eps"]), _privacy(r),
                         f"{r['test']:.2f}", paper, mean, minutes([r["wall_time_s"]])])
    return table(["method (model)", "data set", "eps", "privacy as certified (claimed for LATENT)", "test acc.",
                  "paper (ours - paper)", "Alg. 1 at that eps (0.25x)", "wall time"], rows)


def dpsgd_inception(src: Sources) -> str:
    """Algorithm 1 against DP-SGD on the same Inception, data set, eps and width (``table4_fashionmnist.csv``): each
    beside the paper's full-width value, and the gap between them here and in the paper."""
    r = next(iter(src.runs_of(methods.DPSGD, dataset="fashionmnist")), None)
    if r is None:
        raise ReadmeError(f"{src.runs_dir}/fashionmnist: no DP-SGD run; the dpsgd-inception block compares it")
    from workflow.report.objects import paper_model

    here = src.csv("table4_fashionmnist")
    here = here[here.origin == "here"]
    a = paper_model(here)
    a = a[(a.method == methods.label(methods.ALG1)) & (a.eps == r["eps"]) & (a.width == r["width"])].iloc[0]
    d = here[(here.method == methods.label(methods.DPSGD)) & (here.eps == r["eps"])].iloc[0]
    alg1, dpsgd = methods.label(methods.ALG1), methods.label(methods.DPSGD)
    return table([f"FashionMNIST, eps = {fmt_eps(r['eps'])}, Inception at {r['width']:g}x", "test acc. ours",
                  "paper (full width)", "ours - paper"],
                 [[alg1, acc(a["mean"], a["std"], int(a.n)), labels.pm(a.paper, a.paper_std), f"{a['diff']:+.2f}"],
                  [f"{dpsgd} (GroupNorm)", acc(d["mean"], d["std"], int(d.n)), labels.pm(d.paper, d.paper_std), f"{d['diff']:+.2f}"],
                  [f"{alg1} - {dpsgd}", f"{a['mean'] - d['mean']:+.2f}", f"{a.paper - d.paper:+.2f}", None]])


def bench(src: Sources) -> str:
    """Every ``bench_baselines*.json`` (one per width and thread count): its command, machine, threads and load, then
    seconds per step of the same model and batch, non-private, Algorithm 1 and DP-SGD, one row per model and file."""
    recs = src.jsons("bench_baselines*.json", "python -m workflow bench --baselines --json-out ...")
    files = []
    for p, rec in recs:
        rows = [r for r in rec["rows"] if "dpsgd_s" in r]
        cfg = rec["provenance"]["config"]
        files.append([f"`{p.name}`", f"`{cfg['command']}`", rec["provenance"]["device"], rows[0]["threads"],
                      f"{rows[0]['reps']} interleaved steps", labels.num(cfg.get("load_average_1min_at_end"), ".1f")])
    label = {"inception": "Inception, {w:g}x width, batch {b}", "papernot_cnn": "Papernot CNN (tempered sigmoid), batch {b}"}
    steps = [[label.get(r["model"], r["model"]).format(w=r["width"], b=r["batch"]), r["threads"],
              f"{r['nonprivate_s']:.3f}", f"{r['algorithm1_s']:.3f}", f"{r['dpsgd_s']:.3f}",
              f"{r['algorithm1_s'] / r['nonprivate_s']:.2f}", f"**{r['dpsgd_over_algorithm1']:.2f}**"]
             for _, rec in recs for r in rec["rows"] if "dpsgd_s" in r]
    return (table(["file", "command", "machine", "threads", "median of", "1-min load at its end"], files) + "\n\n"
            + table(["model (GroupNorm, Opacus-compatible)", "threads", "non-private s/step", "Algorithm 1 s/step",
                     "DP-SGD s/step", "Algorithm 1 / non-private", "DP-SGD / Algorithm 1"], steps))


class Block(NamedTuple):
    """A generated block, declared once: the function making its text from a profile's files, and the files it reads
    (``{p}``: the profile), which its header on the page names and the results index shows it beside."""
    make: Callable[[Sources], str]
    files: tuple[str, ...]

    def sources(self, profile: str) -> str:
        return ", ".join(self.files).format(p=profile)


def builders() -> dict[str, Block]:
    """Every generated block of the README and docs/, in the order the results index shows them: name -> Block."""
    from workflow.report import readme_audit as audit
    from workflow.report import readme_campaign as campaign
    from workflow.report import readme_front as front
    from workflow.report import readme_privacy as privacy
    r, runs = "results/{p}", "results/runs/{p}/"
    return {name: Block(make, tuple(files)) for name, make, files in [
        ("findings", front.findings, [f"{r}/headline_cells.csv", f"{r}/table*.csv"]),
        ("privacy-cost", front.privacy_cost, [f"{r}/privacy_cost.csv"]),
        ("findings-reduced-width", front.findings_reduced_width, [f"{r}/headline_cells.csv"]),
        ("scope", front.scope, [f"{r}/table*.csv", f"{r}/fig*.csv", f"{r}/bench_baselines*.json",
                                 f"{r}/dpsgd_step_cost.csv", "workflow/paper.py"]),
        ("timings", front.timings, ["results/timings.csv"]),
        ("precision", front.precision, [f"{r}/precision_validation.csv", f"{r}/bench_sweep*.json"]),
        ("table7", table7, [f"{r}/table7.csv"]),
        ("table7-high-orders", table7_high_orders, [f"{r}/table7_high_orders.csv"]),
        ("runs-alg1", runs_alg1, [runs]),
        ("width-effect", campaign.width_effect, [f"{r}/width_effect.csv"]),
        ("full-width-cost", campaign.full_width_cost, [f"{r}/bench_full_width_t*.json"]),
        ("cpu-precision", campaign.cpu_precision, [f"{r}/bench_sweep*.json"]),
        ("cpu-layout", campaign.cpu_layout, [f"{r}/bench_layout*.json"]),
        ("dpsgd-full-width", campaign.dpsgd_full_width, [f"{r}/bench_dpsgd*.json"]),
        ("baselines", baselines, [runs, f"{r}/table2_mnist.csv", f"{r}/table4_fashionmnist.csv"]),
        ("dpsgd-inception", dpsgd_inception, [f"{runs}fashionmnist/", f"{r}/table4_fashionmnist.csv"]),
        ("bench", bench, [f"{r}/bench_baselines*.json"]),
        ("audit-reconstruction", audit.reconstruction, [f"{r}/audit_reconstruction.csv"]),
        ("audit-canary", audit.canary, [f"{r}/audit_canary.csv"]),
        ("audit-membership", audit.membership, [f"{r}/audit_membership.csv"]),
        ("audit-membership-learned", audit.membership_learned, [f"{r}/audit_released_models.csv", runs]),
        ("audit-subspace", audit.subspace, [f"{r}/audit_subspace.csv"]),
        ("audit-batchnorm", audit.batchnorm, [f"{r}/audit_batchnorm.csv"]),
        ("audit-first-layer", audit.first_layer, [f"{r}/audit_first_layer.csv"]),
        ("audit-control", privacy.control, [f"{r}/audit_control.csv"]),
        ("audit-one-run", privacy.one_run, [f"{r}/audit_one_run.csv"]),
        ("privacy", privacy.privacy, [f"{r}/audit_first_layer.csv", f"{r}/audit_one_run.csv", f"{r}/audit_control.csv",
                                      f"{r}/audit_subspace.csv"]),
    ]}
