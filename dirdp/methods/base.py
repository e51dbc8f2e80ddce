"""What a training method is (:class:`Method`), what its calibration gives (:class:`Noise`), and the learner
that Algorithm 1 and DP-SGD share: an image classifier trained on Poisson batches (:class:`ImageLearner`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from dirdp import loop
from dirdp.augment import random_crop_flip
from dirdp.models import build_model
from dirdp.protocol import Protocol
from dirdp.sampling import PoissonSampler


@dataclass(frozen=True)
class Noise:
    """How a method meets (``eps``, delta) under a protocol: Algorithm 1's scale ``r`` (r* of Eq. (1)) or
    DP-SGD's noise multiplier ``sigma`` (None where not private or not used), and ``privacy``: the fields its
    result JSON carries (``epsilon``, ``epsilon_order``, ``accountant``, ...: what the accountant certifies)."""

    eps: float
    r: float | None = None
    sigma: float | None = None
    privacy: dict = field(default_factory=dict)

    @property
    def private(self) -> bool:
        return math.isfinite(self.eps)


NOT_PRIVATE = dict(epsilon=math.inf, epsilon_order=None, accountant=None)


class Method:
    """One training method of the registry (:mod:`dirdp.methods`).

    ``model`` and ``optimizer``: its defaults (None: the data set's model, SGD); ``finite_eps_only``: whether
    eps = inf is meaningless for it. :meth:`calibrate` maps (eps, protocol) to :class:`Noise`;
    :meth:`learner` builds the :class:`~dirdp.loop.Learner` of one run; :meth:`result_fields` gives the
    method's fields of the result JSON."""

    name: str = ""
    model: str | None = None
    optimizer: str | None = None
    finite_eps_only: bool = False

    def calibrate(self, eps: float, protocol: Protocol, **options) -> Noise:
        raise NotImplementedError

    def build_model(self, cfg, spec) -> torch.nn.Module:
        """The (untrained) model of a run: ``cfg.model`` at ``cfg.width`` for ``spec``'s images, its normalisation
        ``cfg.norm`` (BatchNorm as published, or GroupNorm), a bias on every convolution if ``cfg.conv_bias``."""
        return build_model(cfg.model, num_classes=spec.num_classes, in_channels=spec.channels, width=cfg.width,
                           image_size=spec.size, norm=getattr(cfg, "norm", "batch"),
                           conv_bias=getattr(cfg, "conv_bias", False))

    def learner(self, cfg, data: dict, spec, noise: Noise) -> loop.Learner:
        raise NotImplementedError

    def describe(self, result: dict) -> str:
        """One line: the epsilon a finished run's ``result`` certifies, and by which accountant."""
        raise NotImplementedError

    def result_fields(self, cfg, learner, noise: Noise, state: dict, wall: float) -> dict:
        """The result JSON's method fields, in order: model ... rstar, the privacy record, then
        ``expected_batch``, ``val_accuracy``, ``params_sha256`` and any extra of the method."""
        raise NotImplementedError


class ImageLearner(loop.Learner):
    """An image classifier (``cfg.model`` at ``cfg.width``) trained on Poisson batches at rate ``cfg.q`` by
    SGD or Adam, one seed for everything (:class:`~dirdp.sampling.PoissonSampler`). Subclasses give the loss
    (:meth:`loss`), and may wrap model and optimizer (:meth:`wrap`) and act on empty batches."""

    def __init__(self, cfg, data: dict, spec, noise: Noise, method: Method):
        self.cfg, self.noise, self.data = cfg, noise, data
        self.device = torch.device(cfg.device)
        self.train = data["train"]
        torch.manual_seed(cfg.seed)  # default initialisation draws from the global generator
        net = method.build_model(cfg, spec).to(self.device)
        if cfg.channels_last:
            net = net.to(memory_format=torch.channels_last)
        self.net = net  # the released model
        opt_cls = torch.optim.SGD if cfg.optimizer == "sgd" else torch.optim.Adam
        self.opt = opt_cls(net.parameters(), lr=cfg.lr)
        self.sampler = PoissonSampler(len(self.train), cfg.q, seed=cfg.seed, device=self.device)
        self.model = net  # what computes the forward pass (DP-SGD: Opacus' GradSampleModule around net)
        self.wrap()
        self.model.train()
        extra = (f" r*={noise.r:.4f}" if noise.r else "") + (f" sigma={noise.sigma:.3f}" if noise.sigma else "")
        self.label = f"{cfg.method} {cfg.dataset} eps={cfg.eps:g}{extra} w={cfg.width:g}"

    def wrap(self) -> None:
        """Replace ``self.model``/``self.opt`` by private versions (DP-SGD); nothing by default."""

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), y)

    def batch(self):
        idx = self.sampler.sample()
        if idx.numel() == 0:
            return None
        x, y = self.train.x[idx], self.train.y[idx]
        if self.cfg.augment:
            x = random_crop_flip(x, self.sampler.generator)
        if self.cfg.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x, y

    def step(self, batch) -> torch.Tensor:
        x, y = batch
        with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.cfg.bf16):
            logits = self.model(x)
        loss = self.loss(logits, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def evaluate(self, split: str = "test") -> float:
        return loop.accuracy(self.net, self.data[split], channels_last=self.cfg.channels_last)

    def state_dict(self) -> dict:
        return dict(model=self.net.state_dict(), optimizer=self.opt.state_dict(), **self.sampler.state_dict())

    def load_state_dict(self, state: dict) -> None:
        self.net.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.sampler.load_state_dict(state)

    def released_fields(self) -> dict:
        """``expected_batch``, ``val_accuracy`` (where the data set has a validation split) and ``params_sha256``."""
        return dict(expected_batch=self.cfg.q * len(self.train),
                    val_accuracy=self.evaluate("val") if "val" in self.data else None,
                    params_sha256=loop.params_sha256(self.net))


def width_label(width: float) -> str:
    return "full width" if width == 1.0 else f"reduced width ({width:g}x channels)"
