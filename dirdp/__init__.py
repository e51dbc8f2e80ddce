"""dirdp: reproduction and audit of "End-to-End Differential Privacy in Training Deep Neural
Network Classifiers" (Rao, Hawkins, Benvenuti, Hale, 2026).

The public API (each name imported on first use, so ``import dirdp`` costs nothing)::

    from dirdp import rstar, epsilon, dirichlet_nll, PoissonSampler, kappa, PRESETS, Protocol

- :func:`rstar` (Eq. (1)) and :func:`epsilon` (Theorem 10 -> Lemma 13): :mod:`dirdp.accountant`
- :func:`dirichlet_nll`: Mechanism 8 and the loss of Algorithm 1 (:mod:`dirdp.mechanism`)
- :class:`PoissonSampler`: Definition 5 from one seed or one generator (:mod:`dirdp.sampling`)
- :func:`kappa`, :func:`expected_loss`, :func:`loss_variance`: Theorem 11 (:mod:`dirdp.theory`)
- :data:`PRESETS`, :func:`get_preset`: the protocols of Section 4.1.2; :class:`Protocol` (alpha, q, T, delta)
- :mod:`dirdp.methods`: the training methods (Algorithm 1, DP-SGD, tempered sigmoid, LATENT) by name;
  :mod:`dirdp.training`: one run end to end; :mod:`dirdp.audit`: what the epsilon does and does not cover.

What the epsilon covers: the Dirichlet samples Algorithm 1 releases during training, not the trained model
(our audit, :mod:`dirdp.audit`, measures the model leaking far beyond it).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_API = {
    "rstar": "dirdp.accountant", "epsilon": "dirdp.accountant", "epsilon_floor": "dirdp.accountant",
    "InfeasibleEpsilonError": "dirdp.accountant", "PrivacySpend": "dirdp.accountant",
    "dirichlet_nll": "dirdp.mechanism",
    "PoissonSampler": "dirdp.sampling", "poisson_sample": "dirdp.sampling",
    "kappa": "dirdp.theory", "expected_loss": "dirdp.theory", "loss_variance": "dirdp.theory",
    "PRESETS": "dirdp.presets", "get_preset": "dirdp.presets", "Preset": "dirdp.presets",
    "Protocol": "dirdp.protocol", "parse_eps": "dirdp.protocol",
}

__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        value = getattr(importlib.import_module(_API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dirdp' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_API))
