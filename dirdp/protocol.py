"""The privacy protocol of a run, and the one parser of an epsilon.

A :class:`Protocol` is what the accountant of every method needs besides epsilon: the Dirichlet offset
alpha (Algorithm 1), the Poisson sampling rate q (Definition 5), the number of steps T and delta. It
travels as one object where four loose keywords travelled before; :meth:`Protocol.of` takes it from a
preset (Section 4.1.2) with overrides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

INF = math.inf
_INF_WORDS = ("inf", "+inf", ".inf", "infinity", "+infinity", "∞")


def parse_eps(value) -> float:
    """An epsilon from a CLI flag, YAML, JSON or a table cell: a number > 0, or inf for "not private"
    (``inf``, ``.inf``, ``infinity``, ``∞``, ``math.inf``; any case). A ValueError says what was found."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _INF_WORDS:
            return INF
        try:
            eps = float(text)
        except ValueError:
            raise ValueError(f"eps must be a number > 0 or 'inf'. Found {value!r}.") from None
    elif isinstance(value, bool) or value is None:
        raise ValueError(f"eps must be a number > 0 or 'inf'. Found {value!r}.")
    else:
        eps = float(value)
    if math.isnan(eps) or not eps > 0:
        raise ValueError(f"eps must be a number > 0 or 'inf'. Found {value!r}.")
    return eps


def fmt_eps(eps: float) -> str:
    """An epsilon as file names, labels and JSON print it: 1, 0.5, 7.42, inf."""
    return "inf" if math.isinf(eps) else f"{eps:g}"


@dataclass(frozen=True)
class Protocol:
    """(alpha, q, T, delta): Poisson sampling at rate ``q`` for ``steps`` steps, (eps, ``delta``)-DP, and
    Algorithm 1's Dirichlet offset ``alpha`` (unused by DP-SGD and LATENT, harmless to carry)."""

    alpha: float
    q: float
    steps: int
    delta: float = 1e-5

    def __post_init__(self):
        checks = ((self.alpha > 0, "alpha", "> 0"), (0 < self.q <= 1, "q", "a sampling rate in (0, 1]"),
                  (int(self.steps) == self.steps and self.steps >= 1, "steps", "an integer >= 1"),
                  (0 < self.delta < 1, "delta", "in (0, 1)"))
        for ok, name, allowed in checks:
            if not ok:
                raise ValueError(f"{name} must be {allowed}. Found {name}={getattr(self, name)!r}.")

    @classmethod
    def of(cls, preset: str, **overrides) -> "Protocol":
        """The protocol of the preset called ``preset`` (Section 4.1.2), with ``overrides`` (None = keep)."""
        from dirdp.presets import get_preset

        p = get_preset(preset)
        base = dict(alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta)
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**base)

    def keywords(self) -> dict:
        """``alpha=, q=, steps=, delta=`` for :func:`dirdp.accountant.rstar` and friends."""
        return dict(alpha=self.alpha, q=self.q, steps=self.steps, delta=self.delta)
