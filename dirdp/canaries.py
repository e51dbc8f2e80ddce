"""The canaries of the one-run audit (Steinke, Nasr and Jagielski 2023): which canaries a run trains on, and the
score the auditor gives each canary from the public initialisation theta_0 and the released theta_T.

**The canaries.** ``m`` images of the test split of the *other* grayscale data set (:data:`CANARY_SOURCE`: a run on
MNIST gets Fashion-MNIST images, and the other way round), each with a label drawn uniformly at random, each added to
the training set independently with probability 1/2 (S_i = 1: trained on). They are valid 8-bit images (the source's
bytes, normalised with the *target* data set's constants, exactly as a file of that data set would be), they are in no
split of the target data set (so its test accuracy is untouched), and they are out of distribution for it: a model
that never saw a canary has no reason to prefer its random label, so what the model says about the canary's label is
what training on it did. Which images, labels and bits: ``canary_seed`` alone (not the run's seed), so that two
methods are audited on the same canaries.

**The scores** (higher: "trained on"), each a function of (theta_0, theta_T, the canary) only:

- *black box*: the final model's logit margin of the canary's label, z_y - log sum_{c != y} exp z_c, in float64
  (theta_T alone, the model in eval mode as released);
- *white box*: the alignment of the training's displacement with the canary's own descent direction,
  <theta_0 - theta_T, g> / ||g||, g = grad_theta CE(f_theta(x), y) at theta_T (eval mode), over every trainable
  parameter in float64: how far training moved the parameters along the direction that lowers this canary's loss.

The auditor's guesses and the epsilon lower bound they certify are :mod:`dirdp.audit.one_run`.
"""

from __future__ import annotations

import hashlib
import sys
import time
from dataclasses import dataclass

import numpy as np
import torch

# the data set each target data set's canaries come from (28x28 grayscale, 10 classes both ways)
CANARY_SOURCE = {"mnist": "fashionmnist", "fashionmnist": "mnist"}

SCORES = {
    "black_box": "the final model's logit margin of the canary's label (theta_T only)",
    "white_box": "<theta_0 - theta_T, g> / ||g||, g the canary's cross-entropy gradient at theta_T",
}


@dataclass(frozen=True)
class Canaries:
    """The ``m`` canaries of a run: images ``x`` (normalised for the target data set), labels ``y``, ``included``
    (trained on or not), and where the images come from (``source``'s test split, rows ``index``)."""

    x: torch.Tensor
    y: torch.Tensor
    included: torch.Tensor  # bool [m]
    source: str
    index: np.ndarray

    @property
    def m(self) -> int:
        return len(self.y)


def make_canaries(dataset: str, m: int, seed: int, *, data_root=None) -> Canaries:
    """The ``m`` canaries of a run on ``dataset`` drawn from ``seed`` (see the module docstring); the same arguments
    give the same canaries on any machine (numpy's PCG64 from a seed sequence, integer arithmetic only)."""
    from dirdp.data import get_spec, load

    if dataset not in CANARY_SOURCE:
        raise ValueError(f"the one-run audit's canaries exist for {', '.join(CANARY_SOURCE)}. Found {dataset!r}.")
    if m < 1:
        raise ValueError(f"the one-run audit needs at least one canary. Found m={m}.")
    source, target = get_spec(CANARY_SOURCE[dataset]), get_spec(dataset)
    test = load(source.name, "test", root=data_root)
    if m > len(test):
        raise ValueError(f"{source.name}'s test split has {len(test)} images. Found m={m} canaries.")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x0CA4A7]))
    index = np.sort(rng.choice(len(test), size=m, replace=False))
    labels = rng.integers(0, target.num_classes, size=m)
    included = rng.random(m) < 0.5
    s_mean = torch.tensor(source.mean).view(1, -1, 1, 1)
    s_std = torch.tensor(source.std).view(1, -1, 1, 1)
    raw = torch.round((test.x[torch.from_numpy(index)] * s_std + s_mean) * 255.0).clamp_(0, 255)  # the source's bytes
    t_mean = torch.tensor(target.mean).view(1, -1, 1, 1)
    t_std = torch.tensor(target.std).view(1, -1, 1, 1)
    x = (raw / 255.0 - t_mean) / t_std
    return Canaries(x=x, y=torch.from_numpy(labels.astype(np.int64)), included=torch.from_numpy(included),
                    source=source.name, index=index)


def _flat(params) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1).double() for p in params])


@torch.no_grad()
def _margins(net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int = 250) -> np.ndarray:
    out = []
    for i in range(0, len(y), batch):
        z = net(x[i:i + batch]).double()
        own = z.gather(1, y[i:i + batch, None])[:, 0]
        others = z.scatter(1, y[i:i + batch, None], -torch.inf).logsumexp(1)
        out.append((own - others).cpu())
    return torch.cat(out).numpy()


def scores(net0: torch.nn.Module, net_t: torch.nn.Module, canaries: Canaries, *, progress: bool = False) -> dict:
    """Every canary's black-box and white-box score (:data:`SCORES`) for the pair (theta_0 = ``net0``, theta_T =
    ``net_t``): ``{"black_box": [m], "white_box": [m]}`` as float64 arrays. Neither model is changed (both are
    evaluated in eval mode and put back as they were); the models may be on any device."""
    modes = net0.training, net_t.training
    net0.eval(), net_t.eval()
    try:
        device = next(net_t.parameters()).device
        x, y = canaries.x.to(device), canaries.y.to(device)
        params = [p for p in net_t.parameters() if p.requires_grad]
        names_t = [n for n, p in net_t.named_parameters() if p.requires_grad]
        p0 = dict(net0.named_parameters())
        shift = _flat([p0[n] for n in names_t]).to(device) - _flat(params)  # theta_0 - theta_T
        black = _margins(net_t, x, y)
        white = np.empty(canaries.m)
        it = range(canaries.m)
        if progress:
            from tqdm.auto import tqdm

            it = tqdm(it, desc="white-box scores", unit="canary")
        for i in it:
            with torch.enable_grad():
                loss = torch.nn.functional.cross_entropy(net_t(x[i:i + 1]).float(), y[i:i + 1])
                g = _flat(torch.autograd.grad(loss, params))
            norm = float(g.norm())
            white[i] = float(shift @ g) / norm if norm > 0 else 0.0
        return {"black_box": black, "white_box": white}
    finally:
        net0.train(modes[0]), net_t.train(modes[1])


def record(canaries: Canaries, score: dict, *, net0: torch.nn.Module, wall_s: float, seed: int) -> dict:
    """The result JSON's ``one_run`` field: the canaries (source, rows, labels, trained on or not), each score, what
    each score is, and the hash of theta_0 as rebuilt for the scores (``theta0_sha256``)."""
    from dirdp.loop import params_sha256

    return dict(canaries=canaries.m, canary_seed=int(seed), source=f"{canaries.source} test split",
                canaries_sha256=digest(canaries),
                index=[int(i) for i in canaries.index], label=[int(v) for v in canaries.y],
                included=[int(b) for b in canaries.included], scores={k: [float(v) for v in s] for k, s in score.items()},
                score_definitions=dict(SCORES), theta0_sha256=params_sha256(net0), wall_time_s=round(wall_s, 2))


def with_canaries(train, cfg, data_root=None):
    """The training split ``train`` (a :class:`dirdp.data.Split`) of the run ``cfg`` with the canaries drawn to be
    trained on appended after it."""
    from dirdp.data import Split

    c = make_canaries(cfg.dataset, cfg.canaries, cfg.canary_seed, data_root=data_root)
    return Split(torch.cat([train.x, c.x[c.included]]), torch.cat([train.y, c.y[c.included]]))


def run_record(cfg, net_t: torch.nn.Module, build, data_root, state: dict) -> dict:
    """The result JSON's ``one_run`` field of the run ``cfg``, whose released model is ``net_t``: its canaries and
    each one's scores against theta_0 rebuilt by ``build()`` from the run's seed (in the run's isolated generators, as
    its learner drew it), on the CPU in float32 whatever the run trained in. ``theta0_as_trained``: whether that
    theta_0 is bit for bit the one training started from (its hash, taken at step 0 and kept in the checkpoint's
    ``state``; None where the state has none)."""
    def seeded():
        torch.manual_seed(cfg.seed)
        return build()

    canaries = make_canaries(cfg.dataset, cfg.canaries, cfg.canary_seed, data_root=data_root)
    print(f"one-run audit: scoring {canaries.m} canaries", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    net0 = seeded().cpu().float()
    score = scores(net0, _cpu_copy(net_t, seeded), canaries)
    rec = record(canaries, score, net0=net0, wall_s=time.perf_counter() - t0, seed=cfg.canary_seed)
    at_start = state.get("theta0_sha256")
    rec["theta0_as_trained"] = None if at_start is None else at_start == rec["theta0_sha256"]
    return rec


def _cpu_copy(net_t: torch.nn.Module, build) -> torch.nn.Module:
    """A float32, contiguous-layout copy of ``net_t`` on the CPU (a fresh model of the same architecture loaded with
    its state), leaving the run's model as it is."""
    copy = build().cpu().float()
    copy.load_state_dict({k: v.detach().float().cpu().contiguous() if v.is_floating_point() else v.cpu()
                          for k, v in net_t.state_dict().items()})
    return copy


def digest(canaries: Canaries) -> str:
    """SHA-256 of the canaries' images, labels and bits (what a result's provenance can be checked against)."""
    h = hashlib.sha256()
    for t in (canaries.x, canaries.y, canaries.included):
        h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()
