"""What the subspace canary test (:mod:`workflow.audit.subspace`) audits: the model (BatchNorm replaced by
GroupNorm, so that no example's output depends on another's), the auditor's neighbouring data sets, and
the epsilon each method claims at the audited (q, T).

The claim under audit is Algorithm 1 at the paper's r* (Eq. (1)) for ``eps`` under a preset's protocol
(MNIST: q = 250/60000, T = 9600, alpha = 3, delta = 1e-5; r* = 0.2771 at eps = 1), evaluated at the
audited (q, T): Theorem 10 for q < 1 (:func:`dirdp.accountant.epsilon`), and for q = 1 (no subsampling,
which Theorem 10 does not cover) Lemma 9 composed over T steps and converted by Lemma 13
(:func:`dirdp.accountant.lemma9_epsilon`). DP-SGD, the control, is set by Opacus' RDP accountant to that same epsilon.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import nn

from dirdp import methods

ADJACENCIES = ("add", "replace")
METHODS = methods.AUDITED  # the methods whose step the audit takes (alg1, dpsgd: their specs' ``audit``)


def audit_model(name: str, width: float, *, seed: int, dtype: torch.dtype = torch.float32) -> nn.Module:
    """The model ``name`` at ``width`` for 28x28 grey images and 10 classes, default PyTorch initialisation
    drawn from ``seed`` (the global generator is left as it was), BatchNorm -> GroupNorm, in train mode
    (the mode training uses; GroupNorm and tanh behave the same in both)."""
    from dirdp.models import build_model

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = build_model(name, num_classes=10, in_channels=1, width=width, norm="group")
    return net.to(dtype).train()


def model_fields(name: str, width: float) -> dict:
    """The audited model's typed fields, as its table's rows carry them: ``model`` (its key), ``width`` and ``norm``
    ("group": BatchNorm replaced by GroupNorm; "none": no normalisation layer, as Papernot's tanh CNN)."""
    net = audit_model(name, width, seed=0)
    return dict(model=name, width=float(width),
                norm="group" if any(isinstance(m, nn.GroupNorm) for m in net.modules()) else "none")


@dataclass(frozen=True)
class SubspaceProblem:
    """The auditor's data sets: D = (``x``, ``y``), n real training images, and the canary (``x_canary``,
    ``y_canary``), a real test image. Add/remove: D (world 0) vs D + canary (world 1). Replace-one: D
    (world 0) vs D with record ``replaced`` swapped for the canary (world 1)."""

    x: torch.Tensor
    y: torch.Tensor
    x_canary: torch.Tensor
    y_canary: int
    replaced: int
    source: str

    def world(self, adjacency: str, world: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """(x, y, index of the canary in x or -1) of ``world`` (0 or 1) under ``adjacency``."""
        if adjacency not in ADJACENCIES:
            raise ValueError(f"adjacency must be one of {ADJACENCIES}. Found {adjacency!r}.")
        if world == 0:
            return self.x, self.y, -1
        if adjacency == "add":
            return (torch.cat([self.x, self.x_canary[None]]), torch.cat([self.y, torch.tensor([self.y_canary])]),
                    len(self.y))
        x, y = self.x.clone(), self.y.clone()
        x[self.replaced], y[self.replaced] = self.x_canary, self.y_canary
        return x, y, self.replaced


def subspace_problem(train, test, *, n: int, seed: int = 0, source: str = "mnist") -> SubspaceProblem:
    """D = ``n`` training images drawn at random from ``train`` (a :class:`dirdp.data.Split`), the canary a
    random image of ``test``; replace-one swaps D's last record for the canary."""
    if not 1 <= n < len(train):
        raise ValueError(f"n must lie in [1, {len(train) - 1}]. Found n={n}.")
    g = torch.Generator().manual_seed(seed)
    pick = torch.randperm(len(train), generator=g)[:n]
    c = int(torch.randint(len(test), (1,), generator=g))
    return SubspaceProblem(x=train.x[pick], y=train.y[pick], x_canary=test.x[c], y_canary=int(test.y[c]),
                           replaced=n - 1, source=f"{source}: {n} training images, canary = test image {c}")


def load_problem(n: int, *, seed: int = 0, dataset: str = "mnist", root=None) -> SubspaceProblem:
    """:func:`subspace_problem` on the data set's train and test splits (``root`` or ``$DIRDP_DATA``)."""
    from dirdp.data import load

    return subspace_problem(load(dataset, "train", root=root), load(dataset, "test", root=root), n=n, seed=seed,
                            source=dataset)


@dataclass(frozen=True)
class Claim:
    """A method at the audited (q, T = ``steps``): ``eps`` is the guarantee under audit (Algorithm 1's, at r*),
    ``certified`` what the method's own accountant gives for its parameter (``r`` or ``sigma``)."""

    method: str
    q: float
    steps: int
    eps: float
    certified: float
    delta: float
    alpha: float
    lr: float
    r: float | None = None
    sigma: float | None = None
    order: int | None = None
    accountant: str = ""
    paper_eps: float = math.nan

    @property
    def dirichlet(self) -> bool:
        """Whether the method steps by the Dirichlet loss (Algorithm 1), not by clipped gradients plus noise."""
        return methods.audited(self.method) == methods.DIRICHLET

    @property
    def mechanism(self) -> str:
        return f"r={self.r:.4f}" if self.r is not None else f"sigma={self.sigma:.4f}"


@lru_cache(maxsize=32)
def paper_rstar(eps: float = 1.0, preset: str = "mnist") -> float:
    """r* of Eq. (1) for ``eps`` under the preset's own (alpha, q, T, delta): the r the paper trains with."""
    from dirdp import accountant
    from dirdp.presets import get_preset

    p = get_preset(preset)
    return accountant.rstar(eps=eps, alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta)


@lru_cache(maxsize=32)
def dpsgd_sigma(eps: float, q: float, steps: int, delta: float) -> tuple[float, float]:
    """(sigma, Opacus-RDP epsilon of sigma) for DP-SGD at (eps, delta) after ``steps`` steps at rate ``q``
    (q = 1 allowed): Opacus' ``get_noise_multiplier`` with :func:`dirdp.baselines.dpsgd.rdp_orders`."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.utils import get_noise_multiplier

    from dirdp.baselines.dpsgd import rdp_orders

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sigma = float(get_noise_multiplier(target_epsilon=eps, target_delta=delta, sample_rate=q, steps=steps,
                                           accountant="rdp", alphas=rdp_orders()))
        acc = RDPAccountant()
        acc.history = [(sigma, q, steps)]
        return sigma, float(acc.get_epsilon(delta=delta, alphas=rdp_orders()))


def claim(method: str, *, q: float, steps: int, eps: float = 1.0, preset: str = "mnist", r: float | None = None,
          lr: float | None = None) -> Claim:
    """The claim under audit for ``method`` at (q, T = ``steps``): Algorithm 1 at ``r`` (default: the paper's
    r* for ``eps`` under ``preset``) with the epsilon its accountant gives at (q, T) (Lemma 9 + 13 at q = 1,
    Theorem 10 otherwise); DP-SGD (C = 1) at the sigma Opacus calibrates for that same epsilon."""
    from dirdp import accountant
    from dirdp.presets import get_preset

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}. Found {method!r}.")
    if not (0 < q <= 1 and int(steps) == steps and steps >= 1):
        raise ValueError(f"the audit needs q in (0, 1] (Theorem 10 for q < 1, Lemma 9 at q = 1, the full batch) and an "
                         f"integer steps >= 1. Found q={q}, steps={steps}.")
    p = get_preset(preset)
    r = paper_rstar(eps, preset) if r is None else r
    if q >= 1:
        claimed, order = accountant.lemma9_epsilon(r=r, alpha=p.alpha, steps=steps, delta=p.delta)
        how = "Lemma 9 composed, Lemma 13 (q = 1)"
    else:
        spend = accountant.epsilon(r=r, alpha=p.alpha, q=q, steps=steps, delta=p.delta)
        claimed, order, how = spend.epsilon, spend.order, "Theorem 10"
    common = dict(method=method, q=q, steps=int(steps), eps=claimed, delta=p.delta, alpha=p.alpha,
                  lr=p.lr if lr is None else lr, paper_eps=eps)
    if methods.audited(method) == methods.DIRICHLET:
        return Claim(certified=claimed, r=r, order=order, accountant=how, **common)
    sigma, certified = dpsgd_sigma(claimed, q, int(steps), p.delta)
    return Claim(certified=certified, sigma=sigma, accountant="Opacus RDP", **common)
