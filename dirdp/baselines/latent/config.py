"""LATENT's configuration: what determines the release of one record (see :mod:`dirdp.baselines.latent`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

MECHANISMS = ("uer", "moue", "oue", "rr")
SPLITS = ("parity", "halves")

PAPER_MNIST_CONV = dict(channels=(32, 64), kernel=3, pool=2)
"""The conv module that gives the paper's 9,216 MNIST features (the Keras MNIST CNN's)."""


@dataclass(frozen=True)
class LatentConfig:
    """Everything that determines the LATENT release of one record.

    ``eps``: the claimed per-record LDP budget (> 0; ``math.inf`` gives Pr[1 | 0] = 0, see the table
    in the module docstring). ``alpha``: the privacy-budget coefficient (> 0). ``int_bits`` (m) and
    ``frac_bits`` (n): bits of the whole and fractional part of each value. ``mechanism``: one of
    ``uer`` (the paper), ``moue``, ``oue``, ``rr``. ``split``: UER's two groups, ``parity`` or
    ``halves``. ``sensitivity``: the divisor of eps per bit, None = the string length r * l.
    ``randomize_test``: whether test records go through the randomizer too. ``std_floor``: the
    smallest std used by the per-record z-score (a constant record maps to all zeros).
    """

    eps: float
    alpha: float = 7.0
    int_bits: int = 2
    frac_bits: int = 7
    mechanism: str = "uer"
    split: str = "parity"
    sensitivity: float | None = None
    randomize_test: bool = True
    std_floor: float = 1e-6

    def __post_init__(self):
        if not (self.eps > 0):
            raise ValueError(f"eps must be > 0 (math.inf allowed). Found eps={self.eps}.")
        if not (math.isfinite(self.alpha) and self.alpha > 0):
            raise ValueError(f"alpha must be a finite number > 0. Found alpha={self.alpha}.")
        _check_bits(self.int_bits, self.frac_bits)
        if self.mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {MECHANISMS}. Found mechanism={self.mechanism!r}.")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}. Found split={self.split!r}.")
        if self.sensitivity is not None and not (self.sensitivity > 0):
            raise ValueError(f"sensitivity must be > 0 or None. Found sensitivity={self.sensitivity}.")
        if not (self.std_floor > 0):
            raise ValueError(f"std_floor must be > 0. Found std_floor={self.std_floor}.")

    @property
    def bits_per_value(self) -> int:
        """l = 1 + m + n."""
        return 1 + self.int_bits + self.frac_bits


def _check_bits(int_bits, frac_bits) -> None:
    for name, v in (("int_bits", int_bits), ("frac_bits", frac_bits)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name} must be an integer >= 0. Found {name}={v}.")
    if int_bits + frac_bits < 1 or int_bits + frac_bits > 30:
        raise ValueError(f"int_bits + frac_bits must lie in [1, 30]. Found {int_bits} + {frac_bits}.")

