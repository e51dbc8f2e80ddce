"""What each training method declares about itself, in one place (no torch): the facts the report, the audit, the
bench, the experiments and the CLI ask of a method, so that none of them compares a method's key or label itself.

The keys (:data:`ALG1`, :data:`DPSGD`, :data:`TEMPERED`, :data:`LATENT`) are what ``--method`` takes, what file names
and result JSONs carry; :data:`SPECS` maps each to its :class:`Spec`. :mod:`dirdp.methods` re-exports all of it and
adds :func:`dirdp.methods.get`, which imports a method's implementation. The implementations import this module, not
:mod:`dirdp.methods` (whose table names them: that would be a circle).
"""

from __future__ import annotations

from dataclasses import dataclass

ALG1, DPSGD, TEMPERED, LATENT = "alg1", "dpsgd", "tempered", "latent"
DEFAULT = ALG1  # what ``--method`` and a result JSON without a ``method`` field mean

# how the audit's own trainers (the canary, inversion and subspace audits) take one step of a method
DIRICHLET = "dirichlet"  # Algorithm 1: the batch-mean Dirichlet loss at r (an empty batch makes no update)
CLIPPED = "clipped"  # DP-SGD: per-example gradients clipped to C, summed, plus N(0, sigma^2 C^2), over q n


@dataclass(frozen=True)
class Spec:
    """One method's declarations.

    ``label``: its name in tables and figures; ``short``: in tight figure labels; ``audit_label``: in the audit's
    tables; ``help``: one line for ``--help``. ``ours``: the paper's mechanism (the others are baselines).
    ``model``: the model it always trains (None: the data set's preset model); ``model_label``: what tables call that
    model where it is none of :mod:`dirdp.models`; ``images``: whether it trains an image classifier (LATENT trains an
    FC module on randomized bit strings); ``scaled``: whether a profile's width multiplier applies to its model
    (the Papernot CNN and LATENT run as published). ``norm``: what normalises its model whatever ``--norm`` says
    (None: the run's ``--norm``; "group": DP-SGD's model has BatchNorm replaced by GroupNorm for Opacus; "none": no
    normalisation layer). ``local``: its eps is local DP per record, a different guarantee (LATENT); ``protocol``:
    the protocol its runs are listed under where not the paper's. ``audit``: how the audit's trainers step it
    (:data:`DIRICHLET`, :data:`CLIPPED`; None: not audited by them). ``bench``: the column of a benchmark row that
    times its private step (None: not benchmarked)."""

    label: str
    short: str
    help: str
    audit_label: str = ""
    ours: bool = False
    model: str | None = None
    model_label: str | None = None
    images: bool = True
    scaled: bool = True
    norm: str | None = None
    local: bool = False
    protocol: str | None = None
    audit: str | None = None
    bench: str | None = None

    def __post_init__(self):
        if not self.audit_label:
            object.__setattr__(self, "audit_label", self.label)


SPECS: dict[str, Spec] = {
    ALG1: Spec("Algorithm 1", "Alg. 1", "Algorithm 1 (Dirichlet mechanism at the softmax)", ours=True,
               audit=DIRICHLET, bench="algorithm1_s"),
    DPSGD: Spec("DP-SGD", "DP-SGD", "DP-SGD with Opacus (per-example clipping C, Gaussian noise)", norm="group",
                audit=CLIPPED, bench="dpsgd_s"),
    TEMPERED: Spec("Tempered sigmoid DP-SGD", "Tempered sigmoid DP-SGD",
                   "DP-SGD with Opacus on the tempered-sigmoid CNN of Papernot et al. (2021)",
                   audit_label="DP-SGD (tempered sigmoid)", model="papernot_cnn", scaled=False, norm="none",
                   bench="dpsgd_s"),
    LATENT: Spec("LATENT", "LATENT",
                 "LATENT (Chamikara et al.): local DP per record, FC module trained on randomized bit strings",
                 model=LATENT, model_label="conv + FC", images=False, scaled=False, norm="none", local=True,
                 protocol="LATENT protocol (local DP)"),
}

NAMES: tuple[str, ...] = tuple(SPECS)
LABELS: dict[str, str] = {name: s.label for name, s in SPECS.items()}
DESCRIPTIONS: dict[str, str] = {name: s.help for name, s in SPECS.items()}
BASELINES: tuple[str, ...] = tuple(n for n, s in SPECS.items() if not s.ours)
AUDITED: tuple[str, ...] = tuple(n for n, s in SPECS.items() if s.audit)  # the audit trainers' methods, in order
NON_IMAGE_MODELS: frozenset[str] = frozenset(s.model for s in SPECS.values() if not s.images and s.model)
_BY_LABEL = {s.label: n for n, s in SPECS.items()}


def check(name: str) -> str:
    """``name`` if it is a registered method; a ValueError listing them otherwise."""
    if name not in SPECS:
        raise ValueError(f"method must be one of {', '.join(NAMES)}. Found {name!r}.")
    return name


def spec(name: str) -> Spec:
    """The :class:`Spec` of the method ``name`` (a key; a ValueError otherwise)."""
    return SPECS[check(name)]


def label(name: str) -> str:
    """The method's name in tables and figures."""
    return spec(name).label


def is_ours(name: str) -> bool:
    """Whether ``name`` (a key or a label) is the paper's mechanism, Algorithm 1; False for anything else."""
    s = SPECS.get(_BY_LABEL.get(name, name))
    return bool(s and s.ours)


def is_local(name: str) -> bool:
    """Whether ``name`` (a key or a label) promises local DP per record (its eps a different guarantee); False for
    anything that is no method (e.g. a "non-private" row)."""
    s = SPECS.get(_BY_LABEL.get(name, name))
    return bool(s and s.local)


def norm_chosen(name: str) -> bool:
    """Whether the run's ``--norm`` chooses what normalises the model of ``name`` (a key or a label): Algorithm 1's
    GroupNorm runs are another model than the paper's, to be named as such. False for anything that is no method."""
    s = SPECS.get(_BY_LABEL.get(name, name))
    return bool(s and s.norm is None)


def short(name: str) -> str:
    """The tight name of ``name`` (a key or a label) in figure labels; ``name`` itself if it is no method."""
    s = SPECS.get(_BY_LABEL.get(name, name))
    return s.short if s else name


def audit_label(name: str) -> str:
    """The name of ``name`` in the audit's tables; ``name`` itself if it is no method (a "non-private" row)."""
    s = SPECS.get(name)
    return s.audit_label if s else name


def model_of(name: str, preset_model: str) -> str:
    """The model a run of ``name`` trains on a data set whose preset model is ``preset_model``."""
    return spec(name).model or preset_model


def audited(name: str) -> str:
    """The audit step kind (:data:`DIRICHLET` or :data:`CLIPPED`) of ``name``; a ValueError for a method the audit's
    trainers do not train."""
    s = SPECS.get(name)
    if s is None or s.audit is None:
        raise ValueError(f"method must be {' or '.join(map(repr, AUDITED))}. Found {name!r}.")
    return s.audit
