"""DP-SGD (Abadi et al. 2016) with Opacus: the paper's own baseline of Tables 4 and 5, and, with the
tempered-sigmoid CNN of Papernot et al. (2021), their method.

Per step: a Poisson sample (Definition 5, the same sampler as Algorithm 1), per-example gradients
clipped to l2 norm C = ``max_grad_norm`` (1.0), summed, Gaussian noise N(0, sigma^2 C^2) added, divided
by the expected batch size q n, and an SGD step. sigma (the noise multiplier) is the smallest that
Opacus' RDP accountant certifies for (eps, delta) after T steps at rate q
(``opacus.accountants.utils.get_noise_multiplier``, which returns a sigma whose epsilon is at or below
the target; RDP orders up to 256, see :func:`rdp_orders`). The result also reports the epsilon of Opacus' PRV accountant for the same sigma.

Models are made Opacus-compatible with ``ModuleValidator.fix``: BatchNorm (which mixes examples, so
per-example gradients do not exist) becomes GroupNorm with min(32, C) groups; our models have no
in-place operations. The Papernot CNN has no normalisation and needs no change.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass

import torch
from torch import nn

MAX_GRAD_NORM = 1.0

OPACUS_MISSING = ("DP-SGD needs Opacus, which is not installed: pip install opacus, or pip install 'dirdp[baselines]' "
                  "(on a machine without network, put its wheel on PYTHONPATH; see scripts/gpu_prepare.sh)")

# Opacus' backward hooks fire on the first layer, whose input needs no gradient: expected, harmless
warnings.filterwarnings("ignore", message="Full backward hook is firing")


@contextlib.contextmanager
def _opacus():
    """Around an ``from opacus ... import``: a missing Opacus (or a missing dependency of it) becomes a
    ValueError that says how to install it (the CLI prints it as one ``error:`` line and exits 2)."""
    try:
        yield
    except ImportError as err:
        if getattr(err, "name", None) and err.name.split(".")[0] == "opacus":
            raise ValueError(OPACUS_MISSING) from None
        raise ValueError(f"DP-SGD needs Opacus, which could not be imported ({err}): pip install opacus "
                         "(on a machine without network, put its wheel and its dependencies on PYTHONPATH; "
                         "see scripts/gpu_prepare.sh)") from None


@dataclass(frozen=True)
class Calibration:
    """The noise multiplier for a DP-SGD run and what Opacus' accountants certify for it."""

    noise_multiplier: float
    epsilon_rdp: float
    epsilon_prv: float
    delta: float
    q: float
    steps: int


def rdp_orders() -> list[float]:
    """Opacus' default RDP orders (1.1 ... 63) extended to 256, the order cap of our own accountant:
    at the paper's (q, T) the best order for eps >= 2 lies above 63, and a cap there would only
    loosen DP-SGD's bound (more noise than needed)."""
    with _opacus():
        from opacus.accountants.rdp import RDPAccountant

    return list(RDPAccountant.DEFAULT_ALPHAS) + list(range(64, 257))


def _opacus_epsilon(kind: str, *, sigma: float, q: float, steps: int, delta: float) -> float:
    with _opacus():
        from opacus.accountants import create_accountant

    acc = create_accountant(mechanism=kind)
    acc.history = [(sigma, q, steps)]
    return float(acc.get_epsilon(delta=delta, **({"alphas": rdp_orders()} if kind == "rdp" else {})))


def calibrate(*, eps: float, delta: float, q: float, steps: int) -> Calibration:
    """sigma for (eps, delta)-DP after ``steps`` Poisson-subsampled steps at rate ``q`` (Opacus' RDP
    accountant, binary search to within 0.01 below eps), with the RDP and PRV epsilons of that sigma."""
    with _opacus():
        from opacus.accountants.utils import get_noise_multiplier

    if not eps > 0:
        raise ValueError(f"DP-SGD needs a finite eps > 0. Found eps={eps}.")
    with warnings.catch_warnings():
        # the binary search probes small sigmas whose best order is the largest; only the answer's order matters
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha")
        sigma = float(get_noise_multiplier(target_epsilon=eps, target_delta=delta, sample_rate=q, steps=steps,
                                           accountant="rdp", alphas=rdp_orders()))
    return Calibration(noise_multiplier=sigma,
                       epsilon_rdp=_opacus_epsilon("rdp", sigma=sigma, q=q, steps=steps, delta=delta),
                       epsilon_prv=_opacus_epsilon("prv", sigma=sigma, q=q, steps=steps, delta=delta),
                       delta=delta, q=q, steps=steps)


def make_compatible(model: nn.Module) -> nn.Module:
    """``model`` with BatchNorm replaced by GroupNorm (Opacus' ``ModuleValidator.fix``); raises if
    anything Opacus cannot compute per-example gradients for remains."""
    with _opacus():
        from opacus.validators import ModuleValidator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fixed = ModuleValidator.fix(model)
    ModuleValidator.validate(fixed, strict=True)
    return fixed


def make_private(model: nn.Module, optimizer: torch.optim.Optimizer, *, n: int, q: float, noise_multiplier: float,
                 max_grad_norm: float = MAX_GRAD_NORM, generator: torch.Generator | None = None):
    """Opacus' ``PrivacyEngine.make_private`` with Poisson sampling at rate ``q`` over ``n`` examples:
    returns the GradSampleModule and the DPOptimizer (clip, noise from ``generator``, divide by q n).
    The noise comes from torch's PRNG (Opacus' secure_mode off), as in every published DP-SGD
    experiment; for a production release, use Opacus' secure mode.
    Batches come from the caller's own Poisson sampler (:func:`dirdp.sampling.poisson_sample`, the
    same distribution as Opacus' sampler), so a run resumes exactly from a checkpoint."""
    with _opacus():
        from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    # the loader only tells Opacus the sampling rate and the expected batch size q n
    loader = DataLoader(TensorDataset(torch.zeros(n, 1)), batch_size=max(1, round(q * n)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Secure RNG turned off": the noise comes from ``generator`` (see docstring)
        engine = PrivacyEngine(accountant="rdp")
        module, opt, _ = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                             noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm,
                                             poisson_sampling=True, noise_generator=generator)
    opt.expected_batch_size = q * n  # exact q n, not Opacus' int(): the scale of Abadi et al.'s estimator
    return module, opt


def noise_only_step(module: nn.Module, optimizer) -> None:
    """The DP-SGD update for an empty Poisson batch: no clipped gradient, only the noise (skipping
    the step instead would reveal that the batch was empty). The previous step's gradients are cleared first, as
    every step clears them (Opacus refuses a step on a sum it has already noised)."""
    optimizer.zero_grad(set_to_none=True)
    for p in module.parameters():
        if p.requires_grad:
            p.grad_sample = torch.zeros((0, *p.shape), dtype=p.dtype, device=p.device)
    optimizer.step()
