"""Training methods by name: the one registry.

Each method is a small module (:mod:`~dirdp.methods.alg1`, :mod:`~dirdp.methods.dpsgd`,
:mod:`~dirdp.methods.latent`) with a :class:`~dirdp.methods.base.Method` that says how it calibrates to
(eps, :class:`~dirdp.protocol.Protocol`), how it prepares its model (a :class:`~dirdp.loop.Learner` for the
one training loop) and what privacy record its result carries. What each method declares (its label, model,
normalisation, guarantee, how the audit trains it, what the bench times) is :mod:`dirdp.methods.specs`, re-exported
here: that and the table below are all that importing this package costs (no torch); :func:`get` imports a method's
module when it is first asked for.
"""

from __future__ import annotations

import importlib

from dirdp.methods.specs import (ALG1, AUDITED, BASELINES, CLIPPED, DEFAULT, DESCRIPTIONS, DIRICHLET, DPSGD,
                                 LABELS, LATENT, NAMES, NON_IMAGE_MODELS, SPECS, TEMPERED, Spec, audit_label, audited,
                                 check, is_local, is_ours, label, model_of, norm_chosen, short,
                                 spec)

# name (CLI --method, file names) -> "module:object" of its implementation; what each declares: dirdp.methods.specs
_REGISTRY = {
    ALG1: "dirdp.methods.alg1:ALG1",
    DPSGD: "dirdp.methods.dpsgd:DPSGD",
    TEMPERED: "dirdp.methods.dpsgd:TEMPERED",
    LATENT: "dirdp.methods.latent:LATENT",
}
assert tuple(_REGISTRY) == NAMES

CLI_HELP = ("alg1: Algorithm 1; dpsgd: DP-SGD with Opacus (C=1, sigma calibrated to eps by its RDP accountant); "
            "tempered: DP-SGD on the tempered-sigmoid CNN of Papernot et al.; latent: LATENT local DP (its eps is "
            "per record, a different guarantee)")


def get(name: str):
    """The :class:`~dirdp.methods.base.Method` registered as ``name``."""
    module, _, obj = _REGISTRY[check(name)].partition(":")
    return getattr(importlib.import_module(module), obj)


__all__ = ["ALG1", "AUDITED", "BASELINES", "CLIPPED", "CLI_HELP", "DEFAULT", "DESCRIPTIONS", "DIRICHLET", "DPSGD",
           "LABELS", "LATENT", "NAMES", "NON_IMAGE_MODELS", "SPECS", "TEMPERED", "Spec", "audit_label", "audited",
           "check", "get", "is_local", "is_ours", "label", "model_of", "norm_chosen", "short", "spec"]
