"""Algorithm 1: the Dirichlet mechanism at the softmax (Mechanism 8), r* from Eq. (1), Theorem 10's epsilon.

eps = inf trains the same model non-privately (plain cross-entropy) on the same Poisson batches: the
paper's eps = inf column. The epsilon covers the released Dirichlet samples, not the trained model
(see :mod:`dirdp.audit`).
"""

from __future__ import annotations

import torch

from dirdp import accountant
from dirdp.mechanism import dirichlet_nll
from dirdp.methods import specs
from dirdp.methods.base import NOT_PRIVATE, ImageLearner, Method, Noise, width_label
from dirdp.protocol import Protocol


class Alg1Learner(ImageLearner):
    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.noise.r is None:
            return super().loss(logits, y)
        return dirichlet_nll(logits, y, r=self.noise.r, alpha=self.cfg.alpha, generator=self.sampler.generator)


class Alg1(Method):
    name = specs.ALG1

    def calibrate(self, eps: float, protocol: Protocol, **options) -> Noise:
        """r* = the largest r that Theorem 10 certifies for eps (Eq. (1)), and its epsilon and order."""
        if not eps < float("inf"):
            return Noise(eps=eps, privacy=dict(NOT_PRIVATE))
        r, spend = accountant.calibrate(eps=eps, **protocol.keywords())
        return Noise(eps=eps, r=r, privacy=dict(epsilon=spend.epsilon, epsilon_order=spend.order,
                                                accountant="Theorem 10 (dirdp.accountant)"))

    def learner(self, cfg, data, spec, noise: Noise) -> Alg1Learner:
        return Alg1Learner(cfg, data, spec, noise, self)

    def result_fields(self, cfg, learner, noise, state, wall) -> dict:
        return dict(model=cfg.model, width_label=width_label(cfg.width), delta=cfg.delta, alpha=cfg.alpha,
                    rstar=noise.r, privacy=noise.privacy, **learner.released_fields())

    def describe(self, result: dict) -> str:
        if result["rstar"] is None:
            return "inf"
        return f"{result['epsilon']:.4f} (Theorem 10, order {result['epsilon_order']}), r*={result['rstar']:.6f}"


ALG1 = Alg1()
