"""The exact final-model test on the paper's own network: the first convolution never moves on a zero input.

A convolution's weight gradient is a sum over the records of a batch of (back-propagated signal) x (input
patches). A record that is zero at the model's input (after normalisation: a uniform image at the data set's
mean) therefore contributes exactly nothing to the first convolution's weight gradient, whatever the rest of the
network does with it, BatchNorm's coupling of the batch included. Algorithm 1 as trained here is plain SGD (no
momentum, no weight decay) and makes no update on an empty Poisson batch, so with the first convolution bias-free
(:class:`dirdp.models.ConvBNReLU`):

- **D'** = ``n_zero`` zero records (world 0). In every training on D', the first convolution's weights at theta_T
  equal those at theta_0 bit for bit (bf16 autocast included: the product of a gradient with exact zeros is an
  exact zero, and ``w - lr * 0 == w``), and the first BatchNorm's running mean stays exactly 0 (it starts at 0 and
  averages the channel means of a bias-free convolution of zeros).
- **D** (world 1): D' plus one real canary image (add/remove), or D' with its first record replaced by the canary
  (replace-one). Once the canary is in a batch, its Dirichlet-sampled gradient moves the first convolution's
  weights and its channel means move the running mean, almost surely.

The adversary sees theta_0 (the public, data-independent initialisation) and the released theta_T, nothing else:
the test says "D" when either statistic is non-zero. Its false-positive rate is 0 by the argument above (and every
world-0 trial checks it); its false-negative rate is at most the probability that the canary is never sampled,
(1 - q)^T. So for S = {statistic != 0}, P_D'(S) = 0 < delta < P_D(S): no finite epsilon satisfies
P_D(S) <= e^eps P_D'(S) + delta, the **exact** bound is unbounded (eps = inf) for every delta < 1 - (1 - q)^T,
and the complementary event alone already gives eps >= ln(1 - delta) - T ln(1 - q)
(:func:`dirdp.audit.canary.never_sampled_bound`). The Clopper-Pearson bound of :func:`dirdp.audit.stats.
epsilon_lower_bound` turns the observed error counts into what these trials alone certify at 95%: the test is fixed
in advance (non-zero or not), so every trial counts and no threshold is chosen on held-out data.

**With a bias on every convolution** (``Setting(conv_bias=True)``, as the paper's footnote 2 initialises them;
:func:`dirdp.models.add_conv_biases` draws them after the bias-free model, whose weights stay bit for bit), a zero
record's patches are still exact zeros, so the first convolution's *weights* stay at theta_0 in D' (while the signal
stays finite: 0 x inf is NaN, which would count as a move; ``finite`` records it). What moves without data is left
out: the bias (its gradient has no input factor) and the first running mean it feeds. A biased setting has the one
statistic "first_conv", and each trial records the bias's largest change beside it.

Each trial is one real training run of :mod:`dirdp.methods.alg1` through the one loop (:func:`dirdp.loop.run`):
Inception with BatchNorm at the run's width, the paper's protocol (q, T, alpha, lr, delta, r* for eps), bf16 +
channels_last where asked, a bias on every convolution where asked, seed per trial. Trial records are appended to a
JSON-lines file, one line per trial as it finishes, so an interrupted audit resumes where it stopped
(:func:`run_trials`).

The trial seeds (:func:`trial_seed`) do not depend on ``bf16`` nor ``conv_bias``: settings that differ only there
train from the same seeds (the same batches and initial weights), a paired design; each setting's bounds stand alone.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from dirdp.audit.stats import epsilon_lower_bound
from workflow.audit.claims import ADJACENCY_NAMES, matched_claim, verdict

ADJACENCIES = tuple(ADJACENCY_NAMES)
MODEL = "inception"  # the model the test trains: the paper's own for MNIST (dirdp.presets), BatchNorm (_config)
STATISTICS = {"first_conv": "first convolution's weights: theta_T != theta_0",
              "running_mean": "first BatchNorm's running mean != 0", "either": "either of the two"}
# with a conv bias only the weights' statistic is valid (the bias and the running mean it feeds move without data)
BIASED_STATISTICS = {
    "first_conv": "first convolution's weights: theta_T != theta_0 (ignores the convolution's bias, whose gradient "
                  "does not depend on the input, and the running statistics the bias moves)",
}


def statistics(s: "Setting") -> dict:
    """{name: what it is} of the statistics valid for setting ``s``."""
    return BIASED_STATISTICS if s.conv_bias else STATISTICS


@dataclass(frozen=True)
class Setting:
    """One audited configuration: the data set whose protocol and canary are used, the model's width, the
    privacy level whose r* Algorithm 1 trains at, the number of zero records in D', the precision, the
    number of steps (None: the protocol's T), and whether every convolution has a bias (the paper's footnote 2)."""

    dataset: str = "mnist"
    width: float = 1.0
    eps: float = 1.0
    n_zero: int = 1
    bf16: bool = True
    steps: int | None = None
    canary: int = 0  # index of the canary in the data set's test split
    conv_bias: bool = False  # a bias on every convolution (dirdp.models.add_conv_biases)

    def key(self) -> str:
        """The setting's name in the trial records; ``conv_bias`` (added later) only where True, so that the
        committed trials of the settings before it keep matching."""
        d = asdict(self)
        return json.dumps(d if d["conv_bias"] else {k: v for k, v in d.items() if k != "conv_bias"}, sort_keys=True)


def _config(s: Setting, seed: int):
    from dirdp.training import make_config

    return make_config(s.dataset, s.eps, seed=seed, width=s.width, bf16=s.bf16, channels_last=s.bf16,
                       steps=s.steps, norm="batch", conv_bias=s.conv_bias)


def worlds(s: Setting, canary_x: torch.Tensor, canary_y: int, adjacency: str) -> dict:
    """{world: (x, y, index of the canary or -1)}: D' = ``n_zero`` zero records (label 0), and D."""
    if adjacency not in ADJACENCIES:
        raise ValueError(f"adjacency must be one of {ADJACENCIES}. Found {adjacency!r}.")
    if s.n_zero < 1:
        raise ValueError(f"D' needs at least one zero record (replace-one swaps one). Found n_zero={s.n_zero}.")
    x0 = torch.zeros(s.n_zero, *canary_x.shape)
    y0 = torch.zeros(s.n_zero, dtype=torch.long)
    if adjacency == "add":
        x1, y1, c = torch.cat([x0, canary_x[None]]), torch.cat([y0, torch.tensor([canary_y])]), s.n_zero
    else:
        x1, y1, c = x0.clone(), y0.clone(), 0
        x1[0], y1[0] = canary_x, canary_y
    return {0: (x0, y0, -1), 1: (x1, y1, c)}


def trial(s: Setting, x: torch.Tensor, y: torch.Tensor, canary: int, *, seed: int, test) -> dict:
    """One training of Algorithm 1 on (x, y) from seed ``seed`` with the training code as it is; returns what the
    adversary computes from (theta_0, theta_T), how often the canary was sampled, and checks on the run. The first
    convolution's weights and its bias (if any) are measured apart: ``first_conv_*`` are the weights' alone,
    ``first_conv_bias_max_change`` the bias's largest change (None without a bias)."""
    from dirdp import loop, methods
    from dirdp.audit.batchnorm import first_batchnorm
    from dirdp.data import Split, get_spec

    cfg = _config(s, seed)
    method = methods.get(cfg.method)
    noise = method.calibrate(cfg.eps, cfg.protocol)
    t0 = time.perf_counter()
    with loop.isolated_rng(torch.device("cpu")):
        learner = method.learner(cfg, {"train": Split(x, y), "test": test}, get_spec(cfg.dataset), noise)
        conv, bn = first_batchnorm(learner.net)
        if (conv.bias is not None) != s.conv_bias:
            raise ValueError(f"the setting says conv_bias={s.conv_bias}, but the first convolution "
                             f"{'has' if conv.bias is not None else 'has no'} bias.")
        w0 = conv.weight.detach().clone()
        b0 = None if conv.bias is None else conv.bias.detach().clone()
        rest0 = torch.cat([p.detach().flatten().float() for p in learner.net.parameters()][1:]).clone()
        draw = learner.sampler.sample
        hits = []

        def counted():
            idx = draw()
            if canary >= 0 and bool((idx == canary).any()):
                hits.append(1)
            return idx

        learner.sampler.sample = counted
        state, _ = loop.run(learner, steps=cfg.steps, eval_every=cfg.steps, log_every=cfg.steps)
    w_t = conv.weight.detach()
    rest_t = torch.cat([p.detach().flatten().float() for p in learner.net.parameters()][1:])
    bias_change = None if b0 is None else float((conv.bias.detach() - b0).abs().max())
    return dict(seed=seed, canary_sampled=len(hits), empty_batches=state["empty_batches"],
                first_conv_changed=int((w_t != w0).sum()), first_conv_max_change=float((w_t - w0).abs().max()),
                first_conv_bias_max_change=bias_change,
                running_mean_abs_max=float(bn.running_mean.abs().max()),
                others_moved=float((rest_t - rest0).norm()), finite=bool(torch.isfinite(w_t).all()),
                wall_s=round(time.perf_counter() - t0, 3))


def trial_seed(s: Setting, adjacency: str, world: int, t: int) -> int:
    """The seed of trial ``t`` of ``world``: independent across widths, ``n_zero``, adjacencies, worlds and trials
    (not ``bf16`` nor ``conv_bias``: settings that differ only there share their seeds, paired)."""
    parts = [int(s.width * 1000), int(s.n_zero), ADJACENCIES.index(adjacency), world, t, 49]
    return int(np.random.SeedSequence(parts).generate_state(1)[0] % (2**31 - 1))


def load_records(path: Path) -> list[dict]:
    if not Path(path).exists():
        return []
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def run_trials(s: Setting, *, adjacencies=ADJACENCIES, trials: int, records: Path, data_root=None,
               progress: bool = True, budget_s: float | None = None) -> list[dict]:
    """Run (or resume) ``trials`` trainings per world and adjacency for setting ``s``, appending one JSON line per
    trial to ``records`` (a trial already there for the same setting, adjacency, world and index is not run again).
    ``budget_s``: stop starting new trials after this many seconds (what is done stays recorded). Returns every
    record of ``s`` in the file."""
    from dirdp.data import Split, load

    test = load(s.dataset, "test", root=data_root)
    canary_x, canary_y = test.x[s.canary], int(test.y[s.canary])
    small_test = Split(test.x[:10], test.y[:10])  # the loop's last evaluation: a few images, never used here
    records = Path(records)
    records.parent.mkdir(parents=True, exist_ok=True)
    key = s.key()
    done = {(r["adjacency"], r["world"], r["trial"]) for r in load_records(records) if r["setting"] == key}
    todo = [(a, w, t) for t in range(trials) for a in adjacencies for w in (0, 1) if (a, w, t) not in done]
    start = time.perf_counter()
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc=f"first-layer test w={s.width:g} {'bf16' if s.bf16 else 'fp32'}"
                   f"{' conv bias' if s.conv_bias else ''}", unit="trial")
    for a, w, t in todo:
        if budget_s is not None and time.perf_counter() - start > budget_s:
            break
        x, y, c = worlds(s, canary_x, canary_y, a)[w]
        rec = trial(s, x, y, c, seed=trial_seed(s, a, w, t), test=small_test)
        rec.update(setting=key, adjacency=a, world=w, trial=t)
        with records.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return [r for r in load_records(records) if r["setting"] == key]


def statistic(rec: dict, name: str) -> bool:
    """Whether trial ``rec`` says "D" by statistic ``name`` (a key of :data:`STATISTICS`). With a conv bias only
    "first_conv" is valid (:func:`statistics`); it reads the weights alone (``first_conv_changed``)."""
    conv, bn = rec["first_conv_changed"] > 0, rec["running_mean_abs_max"] > 0
    return {"first_conv": conv, "running_mean": bn, "either": conv or bn}[name]


def rows(s: Setting, recs: list[dict], *, delta: float | None = None) -> list[dict]:
    """One row per adjacency and statistic valid for ``s`` (:func:`statistics`): the error counts, the Clopper-Pearson
    (95%) lower bound, the exact bound and the claim the row faces (Theorem 10 at r*; replace-one: group privacy)."""
    from dirdp import methods
    from dirdp.audit.canary import never_sampled_bound

    cfg = _config(s, 0)
    delta = cfg.delta if delta is None else delta
    noise = methods.get(cfg.method).calibrate(cfg.eps, cfg.protocol)
    claimed = noise.privacy["epsilon"]
    never = (1.0 - cfg.q) ** cfg.steps
    out = []
    for a in ADJACENCIES:
        by_world = {w: [r for r in recs if r["adjacency"] == a and r["world"] == w] for w in (0, 1)}
        if not by_world[0] or not by_world[1]:
            continue
        m = matched_claim(cfg.method, a, q=cfg.q, eps=claimed, certified=claimed, delta=delta)
        for name, what in statistics(s).items():
            fp = sum(statistic(r, name) for r in by_world[0])
            fn = sum(not statistic(r, name) for r in by_world[1])
            lb = epsilon_lower_bound(false_positives=fp, n_negatives=len(by_world[0]), false_negatives=fn,
                                     n_positives=len(by_world[1]), delta=m.delta)
            ceiling = epsilon_lower_bound(false_positives=0, n_negatives=len(by_world[0]), false_negatives=0,
                                          n_positives=len(by_world[1]), delta=m.delta).epsilon
            # exact: world 0's statistic is identically zero (FPR = 0); P_D(S) >= 1 - (1 - q)^T > delta
            exact = math.inf if fp == 0 and 1.0 - never > m.delta else math.nan
            out.append(dict(
                model=MODEL, norm="batch", width=s.width,
                dataset=s.dataset, adjacency=a, q=cfg.q, T=cfg.steps, alpha=cfg.alpha, lr=cfg.lr, rstar=noise.r,
                precision="bf16" if s.bf16 else "fp32", conv_bias=s.conv_bias,
                n_zero_records=s.n_zero, canary=f"{s.dataset} test image {s.canary}", paper_eps=s.eps,
                claimed_eps=claimed, matched_claim_eps=m.eps, matched_claim_delta=m.delta, matched_claim_by=m.by,
                statistic=name, statistic_is=what, adversary_sees="final model",  # theta_0 and theta_T
                trials_per_world=len(by_world[0]), false_positives=fp, false_negatives=fn,
                eps_lower_bound=lb.epsilon, ceiling=ceiling, fpr_upper=lb.fpr_upper, fnr_upper=lb.fnr_upper,
                exact_bound=exact, never_sampled_probability=never,
                never_sampled_bound=never_sampled_bound(q=cfg.q, steps=cfg.steps, delta=m.delta),
                canary_sampled_min=min(r["canary_sampled"] for r in by_world[1]),
                canary_sampled_median=float(np.median([r["canary_sampled"] for r in by_world[1]])),
                world0_first_conv_changed_max=max(r["first_conv_changed"] for r in by_world[0]),
                world0_running_mean_abs_max=max(r["running_mean_abs_max"] for r in by_world[0]),
                world0_others_moved_min=min(r["others_moved"] for r in by_world[0]),
                world1_first_conv_max_change_min=min(r["first_conv_max_change"] for r in by_world[1]),
                world0_first_conv_bias_max_change_max=(max(r["first_conv_bias_max_change"] for r in by_world[0])
                                                       if s.conv_bias else None),
                cpu_s_per_trial=float(np.mean([r["wall_s"] for r in by_world[0] + by_world[1]])),
                cpu_s_total=float(sum(r["wall_s"] for r in by_world[0] + by_world[1])),
                verdict=verdict(lb.epsilon, m.eps, ceiling),
                verdict_exact=("claim violated: no finite eps for this delta" if math.isinf(exact) and m.finite
                               else verdict(exact if exact == exact else 0.0, m.eps, math.inf))))
    return out

