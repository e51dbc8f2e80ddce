"""PoissonSample (Definition 5): the batches of Algorithm 1 and of DP-SGD, from one seed or one generator."""

from __future__ import annotations

import torch


def poisson_sample(n: int, q: float, *, size_generator: torch.Generator, index_generator: torch.Generator,
                   device) -> torch.Tensor:
    """PoissonSample (Definition 5): indices of a subset where each of the n examples is in
    independently with probability q. Drawn as |B| ~ Binomial(n, q) (on the host) and then a
    uniformly random subset of that size (on ``device``), which is the same distribution: given its
    size, an independent-Bernoulli subset is uniform over subsets of that size. Knowing |B| on the
    host avoids a device-to-host sync per step. The batch size varies; it can be empty, and then
    Algorithm 1 makes no update (the step still counts towards T for privacy).
    """
    b = int(torch.binomial(torch.tensor([float(n)]), torch.tensor([float(q)]), generator=size_generator).item())
    if b == 0:
        return torch.empty(0, dtype=torch.long, device=device)
    return torch.randperm(n, generator=index_generator, device=device)[:b]


class PoissonSampler:
    """Poisson batches of ``n`` records at rate ``q`` (Definition 5), as index tensors on ``device``.

    Give ONE of ``seed`` (an int: the sampler makes its generators, the same ones every run of this package
    uses, so that a run is reproducible from its seed) or ``generator`` (a CPU ``torch.Generator`` that draws
    both the batch size and the indices; then ``device`` must be the CPU). :attr:`generator` is the generator
    on ``device`` that also feeds the run's other randomness (the Dirichlet draws of Algorithm 1, DP-SGD's
    noise, augmentation), so that one seed fixes a whole run.

    >>> s = PoissonSampler(60_000, 250 / 60_000, seed=0)
    >>> batch = s.sample()          # a LongTensor of about 250 indices (possibly none)
    """

    def __init__(self, n: int, q: float, *, seed: int | None = None, generator: torch.Generator | None = None,
                 device="cpu"):
        if int(n) != n or n < 1:
            raise ValueError(f"n must be an integer >= 1. Found n={n!r}.")
        if not 0 < q <= 1:
            raise ValueError(f"q must be a sampling rate in (0, 1]. Found q={q!r}.")
        if (seed is None) == (generator is None):
            raise ValueError("give exactly one of seed= (an int) or generator= (a CPU torch.Generator).")
        self.n, self.q, self.device = int(n), float(q), torch.device(device)
        if seed is not None:
            self.size_generator = torch.Generator().manual_seed(10_007 * seed + 1)
            self.generator = torch.Generator(device=self.device).manual_seed(10_007 * seed + 2)
        else:
            if generator.device.type != "cpu" or self.device.type != "cpu":
                raise ValueError("with generator=, the generator and device must both be the CPU; "
                                 "for another device pass seed= instead.")
            self.size_generator = self.generator = generator

    def sample(self) -> torch.Tensor:
        """The indices of the next batch (LongTensor on ``device``; empty with probability (1 - q)^n)."""
        return poisson_sample(self.n, self.q, size_generator=self.size_generator, index_generator=self.generator,
                              device=self.device)

    def __iter__(self):
        while True:
            yield self.sample()

    def state_dict(self) -> dict:
        """The generators' states (checkpoint keys ``g_size`` and ``g_dev``: CPU byte tensors)."""
        return dict(g_size=self.size_generator.get_state(), g_dev=self.generator.get_state())

    def load_state_dict(self, state: dict) -> None:
        # generator states are CPU byte tensors for CPU and CUDA generators alike (map_location may have moved them)
        self.size_generator.set_state(state["g_size"].cpu())
        self.generator.set_state(state["g_dev"].cpu())
