"""Every label a reader sees for a typed field of the result CSVs: the tables carry small enumerations (keys), and
the renderers (the README and docs blocks, the index, the notebooks' printed tables, the figures) apply these
labels, never the other way round: nothing reads a label back.

The fields and their keys:

- ``origin`` (each row of an object's table): ``here`` (made by a run here), ``paper`` (the paper's own cell, not run
  here), ``cited`` (a number the paper quotes from other work), ``not_run`` (a cell of the grid with no value).
- ``interval`` (ours - paper): ``welch`` (a mean over n >= 2 seeds; its degrees of freedom in ``interval_df``),
  ``paper_spread`` (one run: the paper's spread only), ``no_paper_spread`` (the paper prints no std); in
  ``privacy_cost.csv`` also ``one_run`` (a side with one run: no interval).
- ``verdict`` (:func:`workflow.report.compare.verdict`): ``within``, ``below_within``, ``above_within``, ``below``,
  ``above``, ``undecided``, ``one_run``.
- ``status`` of a row made here: ``compared`` (its verdict), ``no_paper_value``, ``not_comparable`` (a reduced
  protocol), ``no_spread``; of any other row: ``not_run`` (why: the free-text ``why`` column, shown as it is),
  ``cited``. In ``privacy_cost.csv``: ``both_run``, ``not_run`` (a side has no full-width run: ``n_eps``/``n_inf``
  say which), ``no_common_precision``.
"""

from __future__ import annotations

import math

import pandas as pd

from dirdp import methods
from dirdp.protocol import fmt_eps
from workflow.report.compare import LEVEL, MARGIN
DATASETS = {"mnist": "MNIST", "fashionmnist": "FashionMNIST", "cifar10": "CIFAR10", "svhn": "SVHN",
            "dermamnist": "DermaMNIST"}
ORIGINS = {"here": "run here", "paper": "paper", "cited": "paper, cited", "not_run": "not run"}
_POINTS = f"{MARGIN:g} point{'s' * (MARGIN != 1)}"
VERDICTS = {"within": f"within {_POINTS} of the paper", "below_within": f"below the paper, within {_POINTS}",
            "above_within": f"above the paper, within {_POINTS}", "below": "below the paper",
            "above": "above the paper", "undecided": "undecided (n = {n})", "one_run": "no verdict (n = 1)"}
INTERVALS = {"welch": "Welch (df = {df:.1f})", "paper_spread": "paper spread only (n = 1)",
             "no_paper_spread": "none (the paper prints no spread)"}
RSTAR_STATUSES = {"match": "match", "differs": "differs", "not_in_paper": "not in paper",
                  "infeasible": "infeasible: eps <= floor {floor:.4f}"}  # Tables 6 and 7 (workflow.report.tables)
STATUSES = {"no_paper_value": "no value printed in the paper", "not_comparable": "not comparable (reduced protocol)",
            "no_spread": "no spread printed", "cited": "cited by the paper; not run here"}


# the audit's tables (results/<profile>/audit_*.csv)
ADJACENCIES = {"add": "add/remove", "replace": "replace one"}
PRECISIONS = {"bf16": "bf16 autocast + channels_last", "fp32": "fp32"}
MODELS = {"papernot_cnn": "tanh CNN", "inception": "Inception", "mlp": "MLP 784-100-10"}
NORMS = {"group": "GroupNorm", "batch": "BatchNorm", "none": "no normalisation"}
SEES = {"final": "final model", "sequence": "every update"}  # the canary audit's statistics: what the adversary sees
ATTACKS = {"dense_first_layer": "dense first layer, analytic", "gradient_inversion": "gradient inversion (Geiping et al.)"}


def blank(value) -> bool:
    """An empty CSV cell: None or a missing value of any kind (NaN of any float type, pandas' NA)."""
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):  # not a scalar
        return False


def num(value, fmt: str, blank_: str = "—") -> str:
    """A number of a CSV cell through ``fmt``; ``blank_`` for an empty cell."""
    return blank_ if blank(value) else format(value, fmt)


def pm(mean, std, blank_: str = "—") -> str:
    """A mean and its spread as the tables print them: "99.37 ± 0.06", "99.37" without a spread."""
    return blank_ if blank(mean) else f"{mean:.2f}" + ("" if blank(std) else f" ± {std:.2f}")


def acc(mean: float, std: float | None, n: int) -> str:
    """Mean over seeds with its spread and n: "85.30 (n = 1)", "85.10 ± 0.21 (n = 3)"."""
    mean = round(mean, 6)  # 85.07499999999999 and 85.075 (the same mean, read from two files) print alike
    return f"{pm(mean, std if n >= 2 else None)} (n = {n})"


def diff_ci(diff, low, high, blank_: str = "—") -> str:
    """ours - paper (or a cost) with its interval where it has one: "+0.12 [-0.30, +0.54]"."""
    if blank(diff):
        return blank_
    return f"{diff:+.2f}" + ("" if blank(low) else f" [{low:+.2f}, {high:+.2f}]")


def width(value: float, precision: str) -> str:
    """A model's width and, for bf16, its precision: "1x, bf16", "0.25x"."""
    return f"{value:g}x" + (", bf16" if precision == "bf16" else "")


def machine(device: str) -> str:
    """A run's processors as a table shows them: without the "cpu: " prefix and the trademark signs."""
    return device.replace("cpu: ", "").replace("(R)", "").replace(" Processor", "")


def dataset(key: str) -> str:
    return DATASETS.get(key, key)


def flag(v) -> bool:
    """A CSV's boolean cell (True/False, or the strings pandas leaves when a column mixes types); missing: False."""
    if isinstance(v, str):
        return v.strip().lower() in ("true", "1", "yes")
    return False if blank(v) else bool(v)


def audited(key: str, width: float) -> str:
    """An audited model from its typed fields: ("inception", 1.0) -> "Inception", ("inception", 0.25) ->
    "Inception 0.25x"."""
    return MODELS.get(key, key) + ("" if float(width) == 1.0 else f" {float(width):g}x")


def exact(v) -> str:
    """An exact bound as the tables print it: "unbounded" for inf, "-" where the audit computes none."""
    v = float(v)
    return "unbounded" if math.isinf(v) else ("-" if math.isnan(v) else f"{v:.1f}")


def claim(v: float) -> str:
    """A claimed eps: "none (no finite claim)" where a neighbouring relation has no finite claim."""
    return "none (no finite claim)" if not math.isfinite(v) else f"{v:.2f}"


# Named cell formats of the block declarations (workflow.report.markdown.columns): "{adjacency:adjacency}" prints the
# field through its label, as "{q:.5f}" prints it through Python's format.
FORMATS = {"adjacency": ADJACENCIES.__getitem__, "method": methods.audit_label, "exact": exact,
           "claim": claim, "eps": fmt_eps, "dataset": dataset, "precision": lambda v: PRECISIONS.get(v, v),
           "conv_bias": lambda v: "yes (footnote 2)" if flag(v) else "no", "min": lambda s: f"{s / 60:.0f} min"}


def verdict(key, n) -> str | None:
    """The sentence of a verdict key for a mean over ``n`` seeds; None for none."""
    return None if blank(key) else VERDICTS[key].format(n=int(n))


def interval(key, df=None) -> str | None:
    """How an interval was made, as the tables print it ("Welch (df = 3.5)"); None for none."""
    return None if blank(key) else INTERVALS[key].format(df=df)


def interval_long(key, df=None) -> str:
    """What an interval is, for a reader: "95% CI, Welch (df = ...)" for a mean over n >= 2 seeds; for one run "95%
    prediction interval (n = 1, the paper's spread)": not a confidence interval of ours - paper, the range one more
    run with the paper's spread would fall in; "" for none."""
    if blank(key):
        return ""
    if key == "paper_spread":
        return f"{LEVEL:.0%} prediction interval (n = 1, the paper's spread)"
    return (f"{LEVEL:.0%} CI, " if key == "welch" else "") + interval(key, df)


def status(row) -> str:
    """The status of a row of an object's table (a mapping or a namedtuple with its fields), as one sentence: its
    verdict (compared), or why it has none; "(reduced width)" below the paper's width, "(GroupNorm, not the paper's
    model)" for Algorithm 1's GroupNorm option."""
    get = row.get if isinstance(row, dict) else lambda k, d=None: getattr(row, k, d)
    key = get("status")
    if blank(key):
        return ""
    if key == "not_run":
        return f"not run here ({get('why')})"
    if key == "cited":
        return STATUSES[key]
    if key in ("no_paper_value", "not_comparable"):
        text = STATUSES[key]
    else:  # compared, no_spread: below the paper's width, said
        text = (verdict(get("verdict"), get("n")) if key == "compared" else STATUSES[key]) + (
            " (reduced width)" if float(get("width")) != 1.0 else "")
    if get("norm") == "group" and methods.norm_chosen(get("method")):
        text += " (GroupNorm, not the paper's model)"
    return text


def rstar_status(r) -> str:
    """The status of a row of Table 6 or 7 (``table6.csv``, ``table7.csv``) in words."""
    return RSTAR_STATUSES[r.status].format(floor=r.floor)


def cost_status(r) -> str:
    """A row of ``privacy_cost.csv`` whose cost is not computed, in words: which side has no full-width run."""
    if r.status == "no_common_precision":
        return "no precision run at full width at both eps"
    missing = [e for e, n in ((float(r.eps), r.n_eps), (math.inf, r.n_inf)) if int(n) == 0]
    return f"no full-width run at eps = {' or '.join(fmt_eps(e) for e in missing)} yet"


def cost_interval(r) -> str:
    """What the cost's interval of a row of ``privacy_cost.csv`` is (:func:`interval_long`), or why it has none."""
    if r.interval == "one_run":
        one = [fmt_eps(e) for e, n in ((float(r.eps), r.n_eps), (math.inf, r.n_inf)) if int(n) < 2]
        return f"none (one run at eps = {' and '.join(one)})"
    return interval_long(r.interval, getattr(r, "interval_df", None))


def readable(table: pd.DataFrame) -> pd.DataFrame:
    """An object's table with its typed fields as a reader reads them (origin, interval, verdict, status), for a
    notebook cell or a log."""
    t = table.copy()
    if "origin" in t:
        t["origin"] = t.origin.map(lambda k: ORIGINS.get(k, k))
    if "status" in t:
        t["status"] = [status(r) for r in table.to_dict("records")]
    if "verdict" in t:
        t["verdict"] = [verdict(v, n) for v, n in zip(table.verdict, table.n)]
    if "interval" in t:
        t["interval"] = [interval(k, d) for k, d in zip(table.interval, table.get("interval_df", [None] * len(t)))]
    return t
