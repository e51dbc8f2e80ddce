"""Training methods by name: the one registry.

Each method is a small module (:mod:`~dirdp.methods.alg1`, :mod:`~dirdp.methods.dpsgd`,
:mod:`~dirdp.methods.latent`) with a :class:`~dirdp.methods.base.Method` that says how it calibrates to
(eps, :class:`~dirdp.protocol.Protocol`), how it prepares its model (a :class:`~dirdp.loop.Learner` for the
one training loop) and what privacy record its result carries. The table below is all that importing this
package costs (no torch): names, the labels tables print, and one line each for ``--help``; :func:`get`
imports a method's module when it is first asked for.
"""

from __future__ import annotations

import importlib

# name (CLI --method, file names) -> (label in tables and figures, one line for --help, "module:object")
_REGISTRY = {
    "alg1": ("Algorithm 1", "Algorithm 1 (Dirichlet mechanism at the softmax)", "dirdp.methods.alg1:ALG1"),
    "dpsgd": ("DP-SGD", "DP-SGD with Opacus (per-example clipping C, Gaussian noise)", "dirdp.methods.dpsgd:DPSGD"),
    "tempered": ("Tempered sigmoid DP-SGD",
                 "DP-SGD with Opacus on the tempered-sigmoid CNN of Papernot et al. (2021)",
                 "dirdp.methods.dpsgd:TEMPERED"),
    "latent": ("LATENT", "LATENT (Chamikara et al.): local DP per record, FC module trained on randomized bit strings",
               "dirdp.methods.latent:LATENT"),
}

NAMES: tuple[str, ...] = tuple(_REGISTRY)
LABELS: dict[str, str] = {name: spec[0] for name, spec in _REGISTRY.items()}
DESCRIPTIONS: dict[str, str] = {name: spec[1] for name, spec in _REGISTRY.items()}
CLI_HELP = ("alg1: Algorithm 1; dpsgd: DP-SGD with Opacus (C=1, sigma calibrated to eps by its RDP accountant); "
            "tempered: DP-SGD on the tempered-sigmoid CNN of Papernot et al.; latent: LATENT local DP (its eps is "
            "per record, a different guarantee)")


def check(name: str) -> str:
    """``name`` if it is a registered method; a ValueError listing them otherwise."""
    if name not in _REGISTRY:
        raise ValueError(f"method must be one of {', '.join(NAMES)}. Found {name!r}.")
    return name


def get(name: str):
    """The :class:`~dirdp.methods.base.Method` registered as ``name``."""
    module, _, obj = _REGISTRY[check(name)][2].partition(":")
    return getattr(importlib.import_module(module), obj)
