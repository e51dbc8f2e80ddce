"""Training protocols of Section 4.1.2 (and Appendix D.1): one frozen preset per data set.

The privacy protocol of a preset is (alpha, delta, q, T); r* follows from it by Eq. (1).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    """One data set's protocol: q = batch_size / n_train, T = steps (Section 4.1.2)."""

    name: str
    n_train: int
    batch_size: int
    steps: int
    lr: float
    model: str
    num_classes: int
    alpha: float = 3.0
    delta: float = 1e-5

    @property
    def q(self) -> float:
        """Poisson sampling rate of Definition 5."""
        return self.batch_size / self.n_train

    @property
    def epochs(self) -> float:
        """E = q T."""
        return self.q * self.steps


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("cifar10", n_train=50_000, batch_size=250, steps=20_000, lr=0.1, model="resnet18", num_classes=10),
        Preset("mnist", n_train=60_000, batch_size=250, steps=9_600, lr=0.1, model="inception", num_classes=10),
        Preset("fashionmnist", n_train=60_000, batch_size=250, steps=9_600, lr=0.1, model="inception", num_classes=10),
        Preset("dermamnist", n_train=7_007, batch_size=70, steps=6_006, lr=0.05, model="resnet9", num_classes=7),
        Preset("svhn", n_train=73_257, batch_size=250, steps=11_722, lr=0.1, model="resnet18", num_classes=10),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; a KeyError listing the known names otherwise."""
    try:
        return PRESETS[name.lower()]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}. Known presets: {', '.join(PRESETS)}.") from None
