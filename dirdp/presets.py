"""Training protocols of Section 4.1.2 (and Appendix D.1): one frozen preset per data set, and the r* the paper
prints for them (Tables 6 and 7).

The privacy protocol of a preset is (alpha, delta, q, T); r* follows from it by Eq. (1). The printed r* are the
paper's numbers, never ours: what shows them puts the accountant's value beside them.
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


# Table 6 (Appendix C.1): r* for CIFAR10/ResNet-18, eps = 1, delta = 1e-5, q = 250/50000, T = 20000, by alpha.
TABLE6_RSTAR: dict[float, float] = {0.1: 0.0087, 0.3: 0.0260, 0.5: 0.0433, 1.0: 0.0864, 2.0: 0.1580, 3.0: 0.2349}

# Table 7 (Appendix D.2): r* at alpha = 3, delta = 1e-5, per preset and eps. Cells printed "—" are absent.
TABLE7_EPS: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0)
TABLE7_RSTAR: dict[str, dict[float, float]] = {
    "cifar10": {1.0: 0.235, 2.0: 0.404, 3.0: 0.559, 4.0: 0.679, 6.0: 0.825, 8.0: 0.903},
    "mnist": {0.5: 0.136, 1.0: 0.277, 2.0: 0.472, 4.0: 0.711},
    "dermamnist": {1.0: 0.137, 4.0: 0.645, 7.42: 0.856},
    "svhn": {1.0: 0.284, 2.0: 0.475, 3.0: 0.575, 4.0: 0.717, 6.0: 0.930, 8.0: 0.964},
    "fashionmnist": {0.5: 0.136, 1.0: 0.277, 2.0: 0.472, 4.0: 0.711},
}
