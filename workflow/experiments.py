"""The paper's tables and figures as grids of training runs, and the profiles that scale them.

Each :class:`PaperObject` names the runs a table or figure needs (data set, method, eps grid, seeds, and what else
varies: q for Table 9, (alpha, gamma) for Figure 2, the optimizer for Table 10). A *profile* (``config/<name>.yaml``)
says how those runs are executed here:

- ``paper``: the full protocol of Section 4.1.2 at full width, 5 seeds (10 for Figure 2);
- ``cpu``: the paper's privacy protocol (q, T, alpha, lr, eps) with a reduced model width;
- ``quick``: minutes on 2 CPU cores: one seed, fewer steps on a training subset, reduced grids (r* recomputed).

One run is one result JSON at ``results/runs/<profile>/<dataset>/<tag>.json``: one Snakemake job each.
"""

from __future__ import annotations

import math
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path


from dirdp import methods
from dirdp.protocol import fmt_eps as fmt  # a number as file names and labels print it: 1, 0.5, inf
from dirdp.protocol import parse_eps as _eps

INF = math.inf

# method key (CLI --method, file names) -> the name tables and figures print (the registry: dirdp.methods)
METHODS: dict[str, str] = methods.LABELS


@dataclass(frozen=True)
class Run:
    """One training run: the data set's protocol (Section 4.1.2) plus what this run varies."""

    dataset: str
    eps: float
    seed: int
    method: str = methods.DEFAULT
    optimizer: str | None = None  # None: SGD
    q: float | None = None  # None: the data set's (or the profile's) q
    alpha: float | None = None  # None: 3
    lr: float | None = None  # None: the data set's gamma
    width: float | None = None  # None: the profile's width (a run at another width says so in its tag: w0.5)
    norm: str | None = None  # None: the model's BatchNorm; "group": GroupNorm (tag: gn)
    precision: str | None = None  # None or "fp32": float32; "bf16": bf16 autocast + channels_last (tag: bf16)
    model: str | None = None  # None: the method's or data set's model; else this one (tag: its name)
    canaries: int | None = None  # the one-run audit's canaries (tag: c<m>); None: a run without
    canary_seed: int | None = None  # which canaries (tag: c<m>s<seed>); None: 0

    @property
    def tag(self) -> str:
        parts = [self.method, self.model, self.optimizer]
        parts += [f"{key}{fmt(getattr(self, key))}" for key in ("q", "alpha", "lr") if getattr(self, key) is not None]
        parts += [self.width is not None and f"w{fmt(self.width)}", self.norm == "group" and "gn",
                  self.precision == "bf16" and "bf16",
                  self.canaries and f"c{self.canaries}" + (f"s{self.canary_seed}" if self.canary_seed else "")]
        return "_".join([p for p in parts if p] + [f"eps{fmt(self.eps)}", f"seed{self.seed}"])

    def path(self, profile: str, root: str = "results/runs") -> str:
        return f"{root}/{profile}/{self.dataset}/{self.tag}.json"


@dataclass(frozen=True)
class PaperObject:
    """A table or figure of the paper whose numbers come from training runs."""

    name: str  # notebook and output stem
    title: str  # e.g. "Table 2" or "Figure 1b"
    dataset: str
    caption: str
    eps: tuple[float, ...] = ()
    seeds: int = 5
    metric: str = "test"  # or "val" (Table 8)
    axis: str = "eps"  # what the table varies: eps, q (Table 9) or lr (Figure 2)
    optimizer: str | None = None
    q_grid: tuple[float, ...] = ()
    alpha_lr: tuple[tuple[float, tuple[float, ...]], ...] = ()
    figures: tuple[str, ...] = ()  # figure stems this object's notebook also writes
    paper_object: str | None = None  # whose printed values to compare with (default: itself)
    baselines: tuple[tuple[str, tuple[float, ...]], ...] = ()  # (method, eps grid) run here beside Algorithm 1

    def runs(self, *, seeds: int | None = None, eps: tuple[float, ...] | None = None,
             q_grid: tuple[float, ...] | None = None, alpha_lr=None, baselines=None) -> list[Run]:
        """The runs of this object, with a profile's reductions of its grid (None = the paper's)."""
        n = self.seeds if seeds is None else seeds
        eps = self.eps if eps is None else tuple(eps)
        baselines = self.baselines if baselines is None else baselines
        out = []
        for seed in range(n):
            if self.axis == "q":
                out += [Run(self.dataset, e, seed, q=q) for e in eps for q in (self.q_grid if q_grid is None else q_grid)]
            elif self.axis == "lr":
                grid = self.alpha_lr if alpha_lr is None else alpha_lr
                out += [Run(self.dataset, e, seed, alpha=a, lr=lr) for e in eps for a, lrs in grid for lr in lrs]
            else:
                out += [Run(self.dataset, e, seed, optimizer=self.optimizer) for e in eps]
                out += [Run(self.dataset, e, seed, method=m) for m, grid in baselines for e in grid]
        return out


_LR_SMALL = (0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0)
_LR_MID = (0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
_LR_LARGE = (0.1, 0.2, 0.5, 0.75, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)

OBJECTS: dict[str, PaperObject] = {o.name: o for o in [
    PaperObject("table1_cifar10", "Table 1", "cifar10", "Test accuracy (%) on CIFAR10, ResNet-18, delta = 1e-5",
                eps=(1, 2, 4, 6, 8, INF)),
    PaperObject("fig1b_cifar10_accuracy_vs_eps", "Figure 1b", "cifar10",
                "CIFAR10 test accuracy against eps: Algorithm 1 beside DP-SGD (De et al.) and Monir and Ghinita",
                eps=(1, 2, 4, 6, 8, INF), paper_object="table1_cifar10"),
    PaperObject("fig2_learning_rate_vs_alpha", "Figure 2", "cifar10",
                "CIFAR10 test accuracy at eps = 1 against gamma (left) and gamma_eff = gamma kappa at s_y = 0.9 (right)",
                eps=(1,), seeds=10, axis="lr",
                alpha_lr=tuple((a, _LR_SMALL) for a in (0.1, 0.2, 0.3, 0.5))
                + tuple((a, _LR_MID) for a in (1.0, 2.0, 3.0)) + tuple((a, _LR_LARGE) for a in (5.0, 10.0))),
    PaperObject("table2_mnist", "Table 2", "mnist", "Test accuracy (%) on MNIST, simplified Inception, delta = 1e-5",
                eps=(0.5, 1, 2, 4, INF), baselines=((methods.TEMPERED, (0.5, 1, 2, 4)), (methods.LATENT, (0.5, 1, 2, 4)))),
    PaperObject("table3_dermamnist", "Table 3", "dermamnist", "Test accuracy (%) on DermaMNIST, ResNet-9, delta = 1e-5",
                eps=(1, 4, 7.42, INF)),
    PaperObject("table8_dermamnist_val", "Table 8", "dermamnist",
                "Validation accuracy (%) on DermaMNIST, ResNet-9, delta = 1e-5 (the runs of Table 3)",
                eps=(1, 4, 7.42, INF), metric="val"),
    PaperObject("table4_fashionmnist", "Table 4", "fashionmnist",
                "Test accuracy (%) on FashionMNIST, simplified Inception, delta = 1e-5", eps=(0.5, 1, 2, 4, INF),
                figures=("fig3a_fashionmnist",),
                baselines=((methods.DPSGD, (0.5, 1, 2, 4)), (methods.TEMPERED, (0.5, 1, 2, 4)),
                           (methods.LATENT, (0.5, 1, 2, 4)))),
    PaperObject("table5_svhn", "Table 5", "svhn", "Test accuracy (%) on SVHN, ResNet-18, delta = 1e-5",
                eps=(1, 2, 3, 4, 6, 8, INF), figures=("fig3b_svhn",), baselines=((methods.DPSGD, (1, 2, 3, 4, 6, 8)),)),
    PaperObject("table9_sampling_rate", "Table 9", "cifar10",
                "Test accuracy (%) on CIFAR10 at (4, 1e-5)-DP against the sampling rate q, T = 20000",
                eps=(4,), axis="q", q_grid=(0.001, 0.01, 0.02, 0.04)),
    PaperObject("table10_adam", "Table 10", "cifar10", "Test accuracy (%) on CIFAR10 with Adam (lr 0.001)",
                eps=(1, 2, 3, 4, 6, 8, INF), optimizer="adam"),
]}


def get_object(name: str) -> PaperObject:
    try:
        return OBJECTS[name]
    except KeyError:
        raise KeyError(f"unknown paper object {name!r}. Known: {', '.join(OBJECTS)}.") from None


@dataclass(frozen=True)
class Profile:
    """How this machine runs the paper's grids (one ``config/<name>.yaml``)."""

    name: str
    objects: tuple[str, ...]  # objects whose runs this profile trains
    datasets: tuple[str, ...]  # restriction (``--config datasets=[...]``)
    training: dict = field(default_factory=dict)  # width, steps, train_subset, q, device, eval_every, ...
    grids: dict = field(default_factory=dict)  # object -> {eps, seeds, q_grid, alpha_lr, baselines, extra}
    config: dict = field(default_factory=dict, compare=False, repr=False)  # the whole profile (campaign, ...)

    @classmethod
    def from_config(cls, config: dict) -> "Profile":
        """From a Snakemake config dict (a profile YAML, plus any ``--config`` overrides), checked against
        config/schema.yaml (a ValueError naming the profile and the key: an empty list of objects, an unknown data
        set, a typo'd key of an extra run or a campaign queue entry, ...)."""
        from workflow import profile_schema

        profile_schema.validate(config, f"profile {config.get('profile')!r}", partial=True)
        objects = tuple(config.get("objects") or OBJECTS)
        datasets = tuple(config.get("datasets") or sorted({OBJECTS[o].dataset for o in objects}))
        return cls(name=config["profile"], objects=objects, datasets=datasets,
                   training=dict(config.get("training") or {}), grids=dict(config.get("grids") or {}),
                   config=dict(config))

    @classmethod
    def load(cls, path: str | Path) -> "Profile":
        """A profile YAML with what it ``extends:`` (as the Snakefile reads it), checked against config/schema.yaml
        (a ValueError naming the key and file)."""
        from workflow import profile_schema

        return cls.from_config(profile_schema.load(path))

    def active(self) -> list[str]:
        """The objects this profile trains and aggregates, after the data-set restriction."""
        return [o for o in self.objects if OBJECTS[o].dataset in self.datasets]

    def runs(self, name: str) -> list[Run]:
        """The runs object ``name`` needs in this profile ([] if left out): its grid, then its ``extra`` Algorithm-1
        runs (``extra: [{eps: 2, seeds: [1, 2]}, {eps: 2, width: 0.5}, {eps: 1, norm: group}]``; seeds: [0])."""
        if name not in self.active():
            return []
        out = self._grid_runs(name)
        for e in (self.grids.get(name) or {}).get("extra") or []:
            width = None if e.get("width") is None or float(e["width"]) == self.width else float(e["width"])
            norm = "group" if e.get("norm") == "group" else None
            precision = "bf16" if e.get("precision", self.precision) == "bf16" else None
            for seed in e.get("seeds", [0]):
                run = Run(OBJECTS[name].dataset, _eps(e["eps"]), int(seed), width=width, norm=norm,
                          precision=precision)
                if run not in out:
                    out.append(run)
        return out

    @property
    def precision(self) -> str:
        """``training: precision`` (fp32 when unset), for the profile's Algorithm-1 runs that name none (a grid's
        cells take the grid's ``precision`` over it, an extra its own); baselines train in fp32 (bf16 unvalidated)."""
        return self.training.get("precision") or "fp32"

    @property
    def width(self) -> float:
        """The width multiplier of the profile's runs (1 = the paper's models)."""
        return float(self.training.get("width") or 1.0)

    def threads(self, run: Run) -> int:
        """Torch threads of ``run``'s job (DAG or campaign): ``training: threads_by_width`` for its model width, else
        ``training: threads`` (1). It changes the order of float sums: results record it (``provenance.sessions``)."""
        width = (run.width or self.width) if methods.spec(run.method).scaled else None
        for entry in self.training.get("threads_by_width") or ():
            if width is not None and float(entry["width"]) == width:
                return int(entry["threads"])
        return int(self.training.get("threads") or 1)

    def _grid_runs(self, name: str) -> list[Run]:
        g = self.grids.get(name) or {}
        alpha_lr = g.get("alpha_lr")
        if alpha_lr is not None:
            alpha_lr = tuple((float(a), tuple(float(x) for x in lrs)) for a, lrs in alpha_lr)
        eps = g.get("eps")
        baselines = g.get("baselines")
        if baselines is not None:
            baselines = tuple((m, tuple(_eps(e) for e in grid)) for m, grid in baselines.items())
        runs = get_object(name).runs(
            seeds=g.get("seeds", self.training.get("seeds")),
            eps=None if eps is None else tuple(_eps(e) for e in eps),
            q_grid=None if g.get("q_grid") is None else tuple(float(q) for q in g["q_grid"]),
            alpha_lr=alpha_lr, baselines=baselines)
        if g.get("precision", self.precision) != "bf16":
            return runs
        return [dataclasses.replace(r, precision="bf16") if methods.is_ours(r.method) else r for r in runs]

    def all_runs(self) -> dict[str, Run]:
        """Every run of the profile's paper objects, keyed by its result path (runs shared by objects appear once)."""
        return {r.path(self.name): r for o in self.active() for r in self.runs(o)}

    def one_run_runs(self) -> dict[str, Run]:
        """The one-run audit's runs (``audit_one_run: runs``, with its canaries) by result path: trained like any run,
        read by the audit alone."""
        sec = self.config.get("audit_one_run") or {}
        return {r.path(self.name): r for e in sec.get("runs") or [] for r in (
            Run(e["dataset"], _eps(e["eps"]), int(seed), method=e.get("method", methods.DEFAULT),
                width=None if float(e.get("width") or self.width) == self.width else float(e["width"]),
                precision="bf16" if e.get("precision") == "bf16" else None, model=e.get("model"),
                canaries=int(sec["canaries"]), canary_seed=int(sec.get("canary_seed") or 0) or None)
            for seed in e.get("seeds", [0]))}

    def every_run(self) -> dict[str, Run]:
        """What the train rule makes: the paper objects' runs and the one-run audit's."""
        return {**self.all_runs(), **self.one_run_runs()}

    def train_args(self, run: Run) -> list[str]:
        """``python -m dirdp train`` arguments (without --out) for ``run`` in this profile."""
        t = self.training
        args = ["--dataset", run.dataset, "--eps", fmt(run.eps), "--seed", str(run.seed)]  # + the run's precision
        if run.method != methods.DEFAULT:
            args += ["--method", run.method]
        q = run.q if run.q is not None else t.get("q")
        # the profile's width shrinks the paper's models; Papernot's CNN and LATENT run as published
        width = (run.width or t.get("width")) if methods.spec(run.method).scaled else None
        for flag, value in [("--optimizer", run.optimizer), ("--q", q), ("--alpha", run.alpha), ("--lr", run.lr),
                            ("--model", run.model), ("--width", width), ("--norm", run.norm), ("--steps", t.get("steps")),
                            ("--train-subset", t.get("train_subset")), ("--device", t.get("device")),
                            ("--eval-every", t.get("eval_every")), ("--checkpoint-every", t.get("checkpoint_every"))]:
            if value is not None:
                args += [flag, str(value)]
        if run.canaries:
            args += ["--canaries", str(run.canaries)] + (["--canary-seed", str(run.canary_seed)] if run.canary_seed else [])
        return args + (["--bf16", "--channels-last"] if run.precision == "bf16" else [])

    def campaign_queue(self) -> list[Run]:
        """Every run in a campaign's order: those each ``campaign: queue:`` entry selects (a filter; a missing key
        matches all), then every other run, seed by seed."""
        runs = list(self.every_run().values())
        order: list[Run] = []
        for entry in (self.config.get("campaign") or {}).get("queue") or []:
            order += [r for r in runs if r not in order and _selects(entry, r, self.width)]
        return order + sorted((r for r in runs if r not in order), key=lambda r: r.seed)


def _selects(entry: dict, run: Run, profile_width: float) -> bool:
    """Whether a campaign queue entry (a filter) selects ``run``. ``model`` and ``canaries`` are matched exactly (a
    missing key: the run has none): an entry that names neither never selects a one-run audit's run."""
    have = dict(dataset=run.dataset, method=run.method, norm=run.norm or "batch", precision=run.precision or "fp32")
    return (entry.get("model") == run.model and int(entry.get("canaries") or 0) == int(run.canaries or 0)
            and all(entry[k] == v for k, v in have.items() if k in entry)
            and ("eps" not in entry or run.eps == _eps(entry["eps"]))
            and ("seeds" not in entry or run.seed in [int(x) for x in entry["seeds"]])
            and ("width" not in entry or float(entry["width"]) == (run.width or profile_width)))
