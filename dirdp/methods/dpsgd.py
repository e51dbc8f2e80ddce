"""DP-SGD with Opacus (:mod:`dirdp.baselines.dpsgd`): sigma from Opacus' RDP accountant; with the
tempered-sigmoid CNN of Papernot et al. (2021) as the ``tempered`` method. The model is made Opacus-compatible
(BatchNorm -> GroupNorm) at eps = inf too, so that the eps = inf column trains the same model."""

from __future__ import annotations

from dirdp.baselines import dpsgd
from dirdp.methods import specs
from dirdp.methods.base import NOT_PRIVATE, ImageLearner, Method, Noise, width_label
from dirdp.protocol import Protocol


class DpsgdLearner(ImageLearner):
    def wrap(self) -> None:
        if self.noise.sigma is not None:
            self.model, self.opt = dpsgd.make_private(
                self.net, self.opt, n=len(self.train), q=self.cfg.q, noise_multiplier=self.noise.sigma,
                max_grad_norm=self.cfg.max_grad_norm, generator=self.sampler.generator)

    def empty_step(self) -> None:
        if self.noise.sigma is not None:
            dpsgd.noise_only_step(self.model, self.opt)  # skipping it would reveal the empty batch


class Dpsgd(Method):
    def __init__(self, name: str):
        self.name, self.model = name, specs.spec(name).model

    def calibrate(self, eps: float, protocol: Protocol, *, max_grad_norm: float = dpsgd.MAX_GRAD_NORM,
                  **options) -> Noise:
        """sigma from Opacus' RDP accountant for (eps, delta) after T steps at rate q, and its RDP and PRV
        epsilons."""
        if not eps < float("inf"):
            return Noise(eps=eps, privacy=dict(NOT_PRIVATE))
        cal = dpsgd.calibrate(eps=eps, delta=protocol.delta, q=protocol.q, steps=protocol.steps)
        return Noise(eps=eps, sigma=cal.noise_multiplier,
                     privacy=dict(epsilon=cal.epsilon_rdp, epsilon_order=None, accountant="opacus rdp",
                                  epsilon_prv=cal.epsilon_prv, noise_multiplier=cal.noise_multiplier,
                                  max_grad_norm=max_grad_norm))

    def build_model(self, cfg, spec):
        """The model with BatchNorm replaced by GroupNorm (Opacus needs per-example gradients)."""
        return dpsgd.make_compatible(super().build_model(cfg, spec))

    def learner(self, cfg, data, spec, noise: Noise) -> DpsgdLearner:
        return DpsgdLearner(cfg, data, spec, noise, self)

    def result_fields(self, cfg, learner, noise, state, wall) -> dict:
        return dict(model=cfg.model, width_label=width_label(cfg.width), delta=cfg.delta, alpha=cfg.alpha,
                    rstar=None, privacy=noise.privacy, **learner.released_fields())

    def describe(self, result: dict) -> str:
        if result.get("noise_multiplier") is None:
            return "inf"
        return (f"{result['epsilon']:.4f} (Opacus RDP; PRV {result['epsilon_prv']:.4f}), "
                f"sigma={result['noise_multiplier']:.4f}")


DPSGD = Dpsgd(specs.DPSGD)
TEMPERED = Dpsgd(specs.TEMPERED)  # the Papernot CNN (specs: its model)
