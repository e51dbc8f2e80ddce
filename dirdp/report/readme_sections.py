"""The README's generated blocks (see :mod:`dirdp.report.readme`): each function here makes one block's text
from the result files of one profile, and nothing in a block is typed by hand. The audit's blocks are in
:mod:`dirdp.report.readme_audit`.

Formats: accuracies to 2 decimals, mean +- sample std over seeds with n beside it (n = 1: no std, and the
status says what one run can say), epsilons as the files give them, wall times in minutes.
"""

from __future__ import annotations

import json
import math
import re
from functools import cached_property
from pathlib import Path

import pandas as pd

from dirdp.protocol import fmt_eps
from dirdp.provenance import read_csv
from dirdp.report.readme_campaign import ReadmeError, acc

NAMES = {"mnist": "MNIST", "fashionmnist": "FashionMNIST", "cifar10": "CIFAR10", "dermamnist": "DermaMNIST",
         "svhn": "SVHN"}
TABLES = {"mnist": "table2_mnist", "fashionmnist": "table4_fashionmnist"}


class Sources:
    """The files of one profile, each read once: ``results/<profile>/<name>.csv``, its executed notebooks and its
    run JSONs (through :func:`dirdp.report.runs.read_run`, the one reader of a run file)."""

    def __init__(self, results: Path, profile: str):
        self.results, self.profile = Path(results), profile
        self.folder = self.results / profile
        self.runs_dir = self.results / "runs" / profile
        self._csv: dict[str, pd.DataFrame] = {}

    def _path(self, relative: str) -> Path:
        path = self.folder / relative
        if not path.is_file():
            raise ReadmeError(f"{path}: missing; the README's numbers come from it (run the '{self.profile}' "
                              "profile's DAG, or `--config train=false` to rebuild tables from the runs)")
        return path

    def csv(self, name: str) -> pd.DataFrame:
        if name not in self._csv:
            self._csv[name] = read_csv(self._path(f"{name}.csv"))[0]
        return self._csv[name]

    def json(self, name: str) -> dict:
        return json.loads(self._path(f"{name}.json").read_text())

    def notebook(self, name: str) -> dict:
        return json.loads(self._path(f"notebooks/{name}.ipynb").read_text())

    def notebook_text(self, name: str) -> str:
        """Every stream output of an executed notebook, joined."""
        return "".join("".join(out.get("text", "")) for cell in self.notebook(name)["cells"]
                       for out in cell.get("outputs", []) if out.get("output_type") == "stream")

    @cached_property
    def runs(self) -> list[dict]:
        from dirdp.report.runs import read_run, run_files
        return [read_run(p) for p in run_files(self.runs_dir)]

    def runs_of(self, method: str, **match) -> list[dict]:
        """The runs of ``method`` whose fields equal ``match``; Algorithm 1's with the paper's BatchNorm unless
        ``norm`` is given (a GroupNorm run is another model)."""
        if method == "alg1":
            match.setdefault("norm", "batch")
        return [r for r in self.runs if r["method"] == method and all(r[k] == v for k, v in match.items())]


def minutes(seconds: list[float]) -> str:
    if not seconds:
        return "—"
    lo, hi = min(seconds) / 60, max(seconds) / 60
    return f"{lo:.0f} min" if round(lo) == round(hi) else f"{lo:.0f}-{hi:.0f} min"


def _paper(row) -> str:
    if pd.isna(row.paper):
        return "—"
    return f"{row.paper:.2f}" + ("" if pd.isna(row.paper_std) else f" ± {row.paper_std:.2f}")


def _seeds(value) -> str:
    """The ``seeds`` cell of an object table ("0", "0,1,2"; pandas reads one seed as a float)."""
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.0f}"
    return ", ".join(str(value).replace(",", " ").split())


# --- Findings: Table 7 and Appendix C.1 -----------------------------------------------------------------------

def table7(src: Sources) -> str:
    t = src.csv("table7")
    printed = t[t.paper_rstar.notna()]
    over = printed[printed.eps_at_paper_rstar > printed.eps]
    cifar = t[(t.dataset == "cifar10") & (t.status == "differs")].sort_values("eps")
    ours_over = t[t.certified_eps.notna() & (t.certified_eps > t.eps)]
    infeasible = t[t.status.str.startswith("infeasible")]
    floors = " and ".join(f"{row.floor:.3f} ({NAMES[row.dataset]})" for row in infeasible.itertuples())
    cells = " and ".join(sorted({NAMES[d] for d in infeasible.dataset}))
    eps_inf = " and ".join(sorted({f"eps={fmt_eps(e)}" for e in infeasible.eps}))
    return (
        f"- **Table 7, CIFAR10 at {' and '.join(f'eps={fmt_eps(e)}' for e in cifar.eps)}.** Eq. (1) gives r* = "
        + " and ".join(f"{r:.6f}" for r in cifar.rstar) + " ("
        + ", ".join(f"{math.floor(r * 1000) / 1000:.3f}" for r in cifar.rstar) + "), the paper prints "
        + " and ".join(f"{r:.3f}" for r in cifar.paper_rstar) + ". Run with the printed values, Theorem 10 certifies "
        + "eps = " + " and ".join(f"{e:.3f}" for e in cifar.eps_at_paper_rstar) + ", over budget. A 50-digit "
        "evaluation of h at the rounding boundaries confirms it independently of our float code "
        f"(`tests/test_paper_tables.py`). More generally {len(over)} of the {len(printed)} printed (rounded) r* "
        f"overshoot their target by up to {(over.eps_at_paper_rstar - over.eps).max():.3f} if used as printed; "
        + ("our r* never does." if ours_over.empty else f"{len(ours_over)} of ours do (a bug: report it).") + "\n"
        f"- **The \"—\" cells of Table 7.** {cells} at {eps_inf} are infeasible with RDP orders up to the cap "
        f"(256, as everywhere here): no r > 0 certifies them, since lim_{{r->0}} h(r) = {floors}. The floor comes "
        "from the factor 3 in Theorem 10's sum and does not depend on alpha; how far larger orders move it is the "
        "next item (notebook `table6_table7_rstar`). The other blank cells (e.g. MNIST at eps=3) are feasible: the "
        "paper just did not run them. We print our value there.")


def appendix_c1(src: Sources) -> str:
    found = dict((m[0], (float(m[1]), float(m[2]))) for m in re.findall(
        r"log-log slope of (\w[\w*]*): ([+-]\d+\.\d+) for alpha in \[[^]]*\], ([+-]\d+\.\d+)",
        src.notebook_text("theorem11_kappa_variance")))
    slopes = ", ".join(f"{'Var' if k == 'variance' else k} {lo:+.2f} then {hi:+.2f}" for k, (lo, hi) in found.items())
    return ("- **Appendix C.1, large alpha.** The appendix assumes r* = c·alpha. Eq. (1) gives that only for small "
            "alpha. For large alpha, r* grows like sqrt(alpha), so kappa falls like alpha^-1/2 instead of saturating "
            f"(log-log slopes for small, then large alpha: {slopes}; executed notebook "
            f"`results/{src.profile}/notebooks/theorem11_kappa_variance.ipynb`).")


# --- Runs made here --------------------------------------------------------------------------------------------

def runs_alg1(src: Sources) -> str:
    out = ["| data set | eps | width | r* | certified eps | test acc. ours | paper (full width) | ours - paper | status "
           "(95% CI) | wall time per run | seeds |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for ds, table in TABLES.items():
        t = src.csv(table)
        rows = t[(t.method == "Algorithm 1") & (t.label == "run here")].sort_values(["eps", "width"])
        for row in rows.itertuples():
            norm = getattr(row, "norm", None)
            norm = "batch" if norm is None or pd.isna(norm) else norm
            precision = getattr(row, "precision", None)
            precision = "fp32" if precision is None or pd.isna(precision) else precision
            runs = src.runs_of("alg1", dataset=ds, eps=row.eps, width=row.width, norm=norm, precision=precision)
            lo = getattr(row, "ci_low", None)
            test = "" if lo is None or pd.isna(lo) else f" (95% CI [{lo:+.2f}, {row.ci_high:+.2f}], {row.interval})"
            out.append(
                f"| {NAMES[ds]} | {fmt_eps(row.eps)} | {row.width:g}x{', GroupNorm' if norm == 'group' else ''}"
                f"{', bf16' if precision == 'bf16' else ''} | "
                + ("—" if pd.isna(row.rstar) else f"{row.rstar:.6f}") + f" | {fmt_eps(row.certified_eps) if math.isinf(row.certified_eps) else f'{row.certified_eps:.4f}'} | "
                f"{acc(row.mean, row.std, int(row.n))} | {_paper(row)} | "
                + ("—" if pd.isna(row.diff) else f"{row.diff:+.2f}") + f" | {row.status}{test} | "
                f"{minutes([r['wall_time_s'] for r in runs])} | {_seeds(row.seeds)} |")
    return "\n".join(out)


def runs_alg1_notes(src: Sources) -> str:
    from dirdp import PRESETS
    from dirdp.theory import kappa

    lines = []
    for r in sorted(src.runs_of("alg1"), key=lambda r: (r["dataset"], r["eps"], r["width"], r["seed"])):
        if not r["curve"]:
            continue
        step, best = max(r["curve"], key=lambda p: p[1])
        if best - r["test"] > 0.3:
            lines.append(f"{NAMES[r['dataset']]} at eps = {fmt_eps(r['eps'])} (width {r['width']:g}x, seed "
                         f"{r['seed']}) ends at {r['test']:.2f} after reaching {best:.2f} at step {step:,}")
    p = PRESETS["mnist"]
    eps1 = src.runs_of("alg1", dataset="mnist", eps=1.0)
    parts = []
    if lines:
        parts.append("Last evaluations more than 0.3 points below the run's best (one evaluation is noisy; the "
                     "curves are in the runs summary): " + "; ".join(lines) + ".")
    if eps1:
        s_y = 1 / 10
        k0 = float(kappa(s_y=s_y, r=eps1[0]["rstar"], alpha=p.alpha))
        parts.append(f"At eps = 1 the accuracy climbs slowly at first (`figures/{src.profile}/runs_accuracy_curves.png`), "
                     f"as the attenuation kappa = {k0:.3f} at initialisation (s_y = {s_y:g}, r* = "
                     f"{eps1[0]['rstar']:.4f}; Eq. (3)) predicts.")
    return "\n".join(parts)


# --- Baselines -------------------------------------------------------------------------------------------------

MODEL = {"tempered": "tempered-sigmoid DP-SGD (Papernot CNN, full size)",
         "latent": "LATENT (frozen conv + FC on UER bits)",
         "dpsgd": "DP-SGD, Opacus (Inception, {w:g}x, GroupNorm)"}


def _privacy(r: dict) -> str:
    if r["method"] == "latent":
        text = f"claimed {fmt_eps(r['eps'])}-LDP per record (exact: {r['eps_ldp_worst_case']:,.0f}"
        return text + (f"; pair median {r['eps_pair_median']:,.0f})" if r.get("eps_pair_median") else ")")
    return (f"({fmt_eps(r['eps'])}, 1e-5): RDP {r['certified_eps']:.3f}, PRV {r['epsilon_prv']:.3f}; "
            f"sigma {r['noise_multiplier']:.3f}")


def baselines(src: Sources) -> str:
    out = ["| method (model) | data set | eps | privacy as certified (claimed for LATENT) | test acc. | paper | "
           "Alg. 1 at that eps (0.25x) | wall time |", "|---|---|---|---|---|---|---|---|"]
    for method in ("tempered", "latent", "dpsgd"):
        for r in sorted(src.runs_of(method), key=lambda r: (r["dataset"] != "mnist", r["eps"], r["seed"])):
            alg1 = [a["test"] for a in src.runs_of("alg1", dataset=r["dataset"], eps=r["eps"], width=0.25)]
            paper = "—"
            if method == "dpsgd":
                t = src.csv(TABLES[r["dataset"]])
                cell = t[(t.method == "DP-SGD") & (t.label == "run here") & (t.eps == r["eps"])]
                if len(cell):
                    row = next(cell.itertuples())
                    paper = f"{_paper(row)} ({row.diff:+.2f}: {row.status})"
            mean = acc(sum(alg1) / len(alg1), pd.Series(alg1).std(), len(alg1)) if alg1 else "—"
            out.append(f"| {MODEL[method].format(w=r['width'])} | {NAMES[r['dataset']]} | {fmt_eps(r['eps'])} | "
                       f"{_privacy(r)} | {r['test']:.2f} | {paper} | {mean} | {minutes([r['wall_time_s']])} |")
    return "\n".join(out)


def latent_exact(src: Sources) -> str:
    r = next(iter(src.runs_of("latent", dataset="mnist", eps=1.0)), None)
    if r is None:
        return "(no LATENT run at eps = 1 on MNIST in this profile)"
    return (f"With our defaults (L = {r['latent_string_length']:,} bits) the claimed eps = 1 release is "
            f"{r['eps_ldp_worst_case']:,.0f}-LDP (`eps_ldp_worst_case` in each result). Between two actual MNIST "
            f"training records the exact loss has a median of {r['eps_pair_median']:,.0f} (`eps_pair_median`, "
            "measured on consecutive records).")


def dpsgd_inception(src: Sources) -> str:
    r = next(iter(src.runs_of("dpsgd", dataset="fashionmnist")), None)
    if r is None:
        return "(no DP-SGD Inception run in this profile)"
    t = src.csv("table4_fashionmnist")
    here = t[t.label == "run here"]
    from dirdp.report.objects import paper_model

    a = paper_model(here)
    a = a[(a.method == "Algorithm 1") & (a.eps == r["eps"]) & (a.width == r["width"])].iloc[0]
    d = here[(here.method == "DP-SGD") & (here.eps == r["eps"])].iloc[0]
    every = r["curve"][1][0] - r["curve"][0][0] if len(r["curve"]) > 1 else r["steps"]
    return (f"Its `wall_time_s` of {r['wall_time_s']:,.0f} s counts the pauses and is not a speed measurement: use "
            f"the benchmark below. Test accuracy along the run (every {every} steps): "
            + ", ".join(f"{p[1]:.2f}" for p in r["curve"]) + " (`accuracy_curve` in the JSON). "
            f"At {r['width']:g}x width DP-SGD is {d['diff']:+.2f} from the paper's full-width value ({d.status}), "
            f"and Algorithm 1 at the same width and eps (n = {int(a.n)}) is {a['diff']:+.2f} from its own: the "
            f"paper's gap of {a.paper - d.paper:.2f} points between them ({a.paper:.2f} vs {d.paper:.2f}) is "
            f"{a['mean'] - d['mean']:.2f} points here ({a['mean']:.2f} vs {d['mean']:.2f}).")


def bench(src: Sources) -> str:
    rec = src.json("bench_baselines")
    rows = [r for r in rec["rows"] if "dpsgd_s" in r]
    load = rec["provenance"]["config"].get("load_average_1min_at_end")
    out = [f"Measured by `{rec['provenance']['config']['command']}` (`results/{src.profile}/bench_baselines.json`, "
           f"{rec['provenance']['device']}, {rows[0]['threads']} thread, medians of {rows[0]['reps']} interleaved "
           "steps" + (f"; 1-minute load average {load:.1f} at its end: campaign runs shared the cores, which slows "
                      "every column alike" if load is not None else "") + "):", "",
           "| model (GroupNorm, Opacus-compatible) | non-private s/step | Algorithm 1 s/step | DP-SGD s/step | "
           "DP-SGD / Algorithm 1 |", "|---|---|---|---|---|"]
    label = {"inception": "Inception, {w:g}x width, batch {b}", "papernot_cnn": "Papernot CNN (tempered sigmoid), batch {b}"}
    for r in rows:
        out.append(f"| {label.get(r['model'], r['model']).format(w=r['width'], b=r['batch'])} | {r['nonprivate_s']:.3f} "
                   f"| {r['algorithm1_s']:.3f} | {r['dpsgd_s']:.3f} | **{r['dpsgd_over_algorithm1']:.2f}** |")
    own = [r["algorithm1_s"] / r["nonprivate_s"] for r in rec["rows"]]
    ratio = {r["model"]: r["dpsgd_over_algorithm1"] for r in rows}
    out += ["", f"The paper says Algorithm 1 is about 2x faster per epoch than DP-SGD; here DP-SGD takes "
            + " and ".join(f"{v:.1f}x as long on the {'Inception' if k == 'inception' else 'small CNN'}"
                           for k, v in ratio.items())
            + f", on CPU with Opacus' hook-based per-example gradients (Algorithm 1 itself costs {min(own):.2f}x-"
            f"{max(own):.2f}x of a non-private step in the same benchmark)."]
    return "\n".join(out)


def builders() -> dict:
    """Block name -> (function making its text, the files it reads)."""
    from dirdp.report import readme_audit as audit
    from dirdp.report import readme_audit_models as models
    from dirdp.report import readme_campaign as campaign
    r = "results/{p}"
    return {
        "table7": (table7, f"{r}/table7.csv"),
        "appendix-c1": (appendix_c1, f"{r}/notebooks/theorem11_kappa_variance.ipynb"),
        "runs-alg1": (runs_alg1, f"{r}/table2_mnist.csv, {r}/table4_fashionmnist.csv, results/runs/{{p}}/"),
        "runs-alg1-notes": (runs_alg1_notes, "results/runs/{p}/"),
        "width-effect": (campaign.width_effect, f"{r}/width_effect.csv, results/runs/{{p}}/fashionmnist/"),
        "full-width-cost": (campaign.full_width_cost, f"{r}/bench_full_width_t*.json"),
        "cpu-precision": (campaign.cpu_precision, f"{r}/bench_sweep.json"),
        "baselines": (baselines, f"results/runs/{{p}}/, {r}/table4_fashionmnist.csv"),
        "dpsgd-inception": (dpsgd_inception, f"results/runs/{{p}}/fashionmnist/, {r}/table4_fashionmnist.csv"),
        "bench": (bench, f"{r}/bench_baselines.json"),
        "latent-exact": (latent_exact, "results/runs/{p}/mnist/"),
        "audit-reconstruction": (audit.reconstruction, f"{r}/audit_reconstruction.csv"),
        "audit-canary": (audit.canary, f"{r}/audit_canary.csv, {r}/notebooks/audit_privacy.ipynb"),
        "audit-membership": (audit.membership, f"{r}/audit_membership.csv, {r}/audit_released_models.csv"),
        "audit-membership-learned": (models.membership_learned, f"{r}/audit_released_models.csv, results/runs/{{p}}/"),
        "audit-subspace": (models.subspace, f"{r}/audit_subspace.csv"),
        "audit-batchnorm": (models.batchnorm, f"{r}/audit_batchnorm.csv, results/runs/{{p}}/mnist/"),
        "table7-high-orders": (models.table7_high_orders, f"{r}/table7_high_orders.csv"),
    }

