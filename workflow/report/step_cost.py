"""What one DP-SGD step costs beside Algorithm 1's at the paper's width, and the decision it drives.

A DP-SGD step bench (``results/<profile>/bench_dpsgd*.json``, ``python benchmarks/bench_dpsgd.py``) times, on one
fixed batch of 250 images, Algorithm 1 as the campaign trains it (the reference of every ratio) and every DP-SGD
implementation available here (Opacus' hooks, its fast gradient clipping, per-example gradients by ``torch.func``;
fp32 and bf16). :func:`table` turns one bench into rows (one per variant: its median and each timed step, the ratio
to Algorithm 1, what the paper's T such steps would take, or why the variant failed); :func:`decision` applies the
rule of the cpu profile: where the fastest DP-SGD step is within :data:`WITHIN` times Algorithm 1's, DP-SGD trains at
the paper's width beside Algorithm 1, else Table 4's DP-SGD row trains at a reduced width. :func:`draw` is the figure
``notebooks/dpsgd_step_cost.ipynb`` saves.
"""

from __future__ import annotations

import math

import pandas as pd

from dirdp import methods

WITHIN = 3.0  # DP-SGD trains at full width where its fastest step is at most this many Algorithm-1 steps
ALG1, DPSGD = methods.ALG1, methods.DPSGD  # the two families of the bench's variants (method keys)
# every variant of benchmarks/bench_dpsgd.py (its name: the key of its row) -> the method it steps; the bench times
# these and no other (tests/test_step_cost.py)
VARIANT_METHODS = {"alg1 bf16+cl (BatchNorm)": ALG1, "alg1 fp32 (GroupNorm)": ALG1, "opacus hooks fp32": DPSGD,
                   "opacus hooks bf16": DPSGD, "opacus ghost fp32": DPSGD, "torch.func fp32": DPSGD,
                   "torch.func bf16": DPSGD}


def family(variant: str) -> str:
    """The method a bench variant steps (:data:`VARIANT_METHODS`): its key, labelled where a table or figure shows
    it."""
    if variant not in VARIANT_METHODS:
        known = ", ".join(VARIANT_METHODS)
        raise ValueError(f"{variant!r}: not a variant of benchmarks/bench_dpsgd.py (known: {known})")
    return VARIANT_METHODS[variant]


def table(rec: dict, *, steps: int, source: str = "") -> pd.DataFrame:
    """One row per variant of bench record ``rec``: ``family``, ``median_s`` (s/step), ``over_algorithm1``,
    ``run_hours`` (``steps`` such steps, the steps alone: no evaluation, no checkpoint), ``times_s`` (every timed step,
    ``;``-joined), ``fastest_dpsgd`` and ``error`` (why a variant did not run; its numbers are then empty); with the
    bench's device and threads, and ``source`` (its file)."""
    prov, cfg = rec["provenance"], rec["provenance"]["config"]
    rows = []
    for r in rec["rows"]:
        failed = r.get("median_s_per_step") is None
        rows.append(dict(
            source=source, device=prov["device"], threads=cfg["threads"], width=cfg["width"], batch=cfg["batch"],
            variant=r["variant"], family=family(r["variant"]),
            median_s=math.nan if failed else r["median_s_per_step"],
            over_algorithm1=math.nan if failed else r["over_algorithm1"],
            run_hours=math.nan if failed else r["median_s_per_step"] * steps / 3600,
            times_s="" if failed else ";".join(f"{t:.4f}" for t in r["times_s"]),
            fastest_dpsgd=r["variant"] == rec.get("fastest_dpsgd"), error=r.get("error", "")))
    if not rows or ALG1 not in {r["family"] for r in rows if not r["error"]}:
        raise ValueError(f"{source or 'bench record'}: no Algorithm-1 step timed, so no ratio to read "
                         "(rerun python benchmarks/bench_dpsgd.py)")
    return pd.DataFrame(rows)


def decision(t: pd.DataFrame) -> tuple[str, float | None]:
    """``("full", ratio)`` where the fastest DP-SGD step of bench table ``t`` is within :data:`WITHIN` times
    Algorithm 1's, ``("reduced", ratio)`` where it is over, ``("reduced", None)`` where no DP-SGD variant ran."""
    dp = t[(t.family == DPSGD) & t.over_algorithm1.notna()]
    if dp.empty:
        return "reduced", None
    ratio = float(dp.over_algorithm1.min())
    return ("full" if ratio <= WITHIN else "reduced"), ratio


def profile_widths(prof) -> list[float]:
    """The widths at which profile ``prof`` (a :class:`workflow.experiments.Profile`) trains Table 4's DP-SGD row
    (FashionMNIST); a run without a width of its own has the profile's."""
    return sorted({r.width or prof.width for r in prof.all_runs().values()
                   if r.method == methods.DPSGD and r.dataset == "fashionmnist"})


def check_profile(prof, t: pd.DataFrame) -> str:
    """What the profile does beside what bench table ``t`` allows, in one line; raises ValueError where the profile
    trains DP-SGD at full width although the bench puts its step over :data:`WITHIN` Algorithm-1 steps."""
    width, ratio = decision(t)
    widths = profile_widths(prof)
    said = (f"{prof.name}: Table 4's DP-SGD row at width(s) {', '.join(f'{w:g}x' for w in widths) or 'none'}; the "
            f"bench ({t.source.iloc[0] or 'record'}) allows {width} width"
            + (f" (fastest DP-SGD step {ratio:.2f}x Algorithm 1's)" if ratio is not None else " (no DP-SGD step ran)"))
    if width == "reduced" and widths and max(widths) >= 1:
        raise ValueError(said + ": train it at a reduced width (config/<profile>.yaml) or bench again")
    return said


def draw(ax, t: pd.DataFrame, *, steps: int) -> None:
    """One bench on ``ax``: a bar per variant (median s/step, a dot per timed step), Algorithm 1 blue, DP-SGD orange,
    the fastest DP-SGD hatched; the dotted line at Algorithm 1's step, the paper's ratio (Section 4.2.5: DP-SGD's
    epoch over Algorithm 1's, :mod:`workflow.paper`) dash-dotted, and the dashed one at :data:`WITHIN` times it (the
    decision); each bar labelled with its ratio and the hours of ``steps`` such steps; a failed variant named with
    its error in place of a bar."""
    from workflow import paper
    from workflow.report import style

    t = t.reset_index(drop=True)
    ref = float(t[(t.family == ALG1) & (t.over_algorithm1 == 1.0)].median_s.iloc[0])
    y = range(len(t))[::-1]  # the bench's order, top down
    for yi, r in zip(y, t.itertuples()):
        color = style.BLUE if r.family == ALG1 else style.ORANGE
        if r.error:
            ax.text(ref * 0.05, yi, f"did not run: {r.error[:60]}", va="center", fontsize=10, color=style.GREY)
            continue
        ax.barh(yi, r.median_s, color=color, alpha=0.85, hatch="//" if r.fastest_dpsgd else None,
                edgecolor="black" if r.fastest_dpsgd else color)
        times = [float(s) for s in r.times_s.split(";") if s]
        ax.scatter(times, [yi] * len(times), color="black", s=8, zorder=3)
        ax.annotate(f"{r.over_algorithm1:.2f}x, {r.run_hours:.1f} h", (max(times + [r.median_s]), yi),
                    textcoords="offset points", xytext=(5, 0), va="center", fontsize=10)
    claimed = paper.EPOCH_SECONDS_DPSGD / paper.EPOCH_SECONDS_ALG1
    ax.axvline(ref, color=style.BLUE, ls=":", lw=1.5, label="Algorithm 1's step (1x)")
    ax.axvline(claimed * ref, color=style.PURPLE, ls="-.", lw=1.5,
               label=f"the paper: DP-SGD's epoch {claimed:.2f}x Algorithm 1's ({paper.EPOCH_SETTING})")
    ax.axvline(WITHIN * ref, color=style.BLACK, ls="--", lw=1.2,
               label=f"{WITHIN:g}x: DP-SGD at full width only left of this line")
    ax.set_yticks(list(y), [f"{v}{' (fastest DP-SGD)' if f else ''}" for v, f in zip(t.variant, t.fastest_dpsgd)])
    ax.set_xlim(0, float(t.median_s.max()) * 1.45)
    r0 = t.iloc[0]
    ax.set(xlabel=f"seconds per step (bar: the median; dots: each timed step)\n"
                  f"label: the median over Algorithm 1's, and T = {steps:,} such steps in hours",
           title=f"{r0.device}, {r0.threads} thread(s), Inception {r0.width:g}x, batch {r0.batch}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), frameon=False)  # below: it covers no bar
