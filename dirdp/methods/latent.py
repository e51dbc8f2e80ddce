"""LATENT (:mod:`dirdp.baselines.latent`) as a run: every record released once through the LATENT layer, the
FC module trained for T minibatches of q n records by the one loop. Its epsilon is the paper's *local* DP
claim per record; ``eps_ldp_worst_case`` is what the release really is."""

from __future__ import annotations

from dirdp.baselines.latent import LatentConfig
from dirdp.baselines.latent.service import LatentLearner
from dirdp.methods import specs
from dirdp.methods.base import Method, Noise
from dirdp.protocol import Protocol


class Latent(Method):
    name = specs.LATENT
    model = specs.spec(specs.LATENT).model
    optimizer = "adam"  # its FC module is trained with Adam
    finite_eps_only = True

    def calibrate(self, eps: float, protocol: Protocol, **options) -> Noise:
        """Nothing to calibrate: the claimed per-record LDP budget is eps itself."""
        if not eps < float("inf"):
            raise ValueError("LATENT randomizes with a finite eps. Found eps=inf.")
        return Noise(eps=eps, privacy=dict(epsilon=eps, epsilon_order=None,
                                           accountant="LATENT's claim: eps-LDP per record"))

    def build_model(self, cfg, spec):
        raise ValueError("is a LATENT run: its model reads randomized bit strings, not images.")

    def learner(self, cfg, data, spec, noise: Noise) -> LatentLearner:
        n = len(data["train"])
        return LatentLearner(train=data["train"], test=data["test"], num_classes=spec.num_classes,
                             cfg=LatentConfig(eps=cfg.eps, alpha=cfg.latent_alpha), batch_size=max(1, round(cfg.q * n)),
                             lr=cfg.lr, optimizer=cfg.optimizer, seed=cfg.seed)

    def result_fields(self, cfg, learner, noise, state, wall) -> dict:
        rec = learner.record(state, wall, cfg.steps)
        privacy = dict(noise.privacy, epsilon=rec["eps_claimed"], eps_ldp_worst_case=rec["eps_ldp_worst_case"],
                       eps_pair_median=rec["eps_pair_median"],
                       latent=dict(method=self.name,
                                   **{k: v for k, v in rec.items() if k not in ("accuracy_curve", "loss_curve")}))
        return dict(model=self.model, width_label="LATENT: untrained conv module + FC module on randomized bits", norm="none",
                    delta=None, alpha=cfg.latent_alpha, rstar=None, privacy=privacy,
                    expected_batch=round(cfg.q * len(learner.train)), val_accuracy=None, params_sha256=None)

    def describe(self, result: dict) -> str:
        return (f"{result['epsilon']:g} claimed (local DP per record); exact LDP epsilon of the release "
                f"{result['eps_ldp_worst_case']:.4g}")


LATENT = Latent()
