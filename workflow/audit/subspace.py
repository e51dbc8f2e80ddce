"""The subspace canary test: a white-box distinguishing audit of Algorithm 1 on the paper's own model
families, with DP-SGD at the same claimed epsilon as the control.

One step of Algorithm 1 moves the parameters by -lr/|B| sum_{i in B} J_i^T g_i, where J_i is the
[d x P] Jacobian of record i's logits at theta_t and g_i its logit gradient, random through the
Dirichlet sample. The mechanism's randomness therefore lives only inside span{J_i^T}. DP must hold for
every pair of neighbouring data sets, so the auditor picks D with n d << P.

**The statistic** (both adjacencies). World 0 is D (n records), world 1 its neighbour: add/remove,
D + c; replace-one, D with its record r swapped for the canary c. At every step t the auditor (white
box: it sees every iterate) evaluates the Jacobians of *all* records of D at the observed theta_t (not
only the sampled ones, which it cannot see), takes an orthonormal basis Q_t of

    S_t = span{J_i(theta_t)^T : i in D}    (Householder QR of the stacked [n d x P] Jacobian, float64)

and computes rho_t = ||(I - Q_t Q_t^T)(theta_{t+1} - theta_t)||, with the projection applied twice
(re-orthogonalised). The test statistic is max_t rho_t, and "canary in" means "statistic above a
threshold" chosen on the first half of each world's trials
(:func:`dirdp.audit.stats.audit_threshold`). For replace-one, D contains r: S_t is the span over
the records both worlds share *plus* r's own d rows, so world 0's update lies in S_t, while world 1's
residual is the canary's J_c^T g_c with the shared records and r projected out. In world 0,
Algorithm 1's rho_t is at round-off. In world 1 it is non-zero almost surely at every step that
samples c. Steps with an empty Poisson batch make no update (Algorithm 1) and are skipped.
DP-SGD's noise fills all of R^P, so rho_t is dominated by noise in both worlds.

**What the adversary sees.** The statistic above uses every iterate: a lower bound for the *sequence of
updates*, fair against the paper's proof (which treats each step as post-processing and composes) but more
than Algorithm 1 releases ("Output: theta_T"). The **final-model statistic** uses theta_0 (the public
initialisation) and theta_T alone:

    rho_final = ||(I - Q Q^T)(theta_T - theta_0)||,   Q an orthonormal basis of S_0 + S_T,

the span of D's Jacobians at both ends. It is not exact (the Jacobians drift between theta_0 and theta_T, so
world 0's residual is small but not round-off); its threshold is chosen and its errors counted on held-out
trials like the other's, so its bound is as valid. Rows: :mod:`workflow.audit.subspace_rows`.
"""

from __future__ import annotations

import copy
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, jacrev, vmap

from workflow.audit.subspace_setup import (ADJACENCIES, METHODS, Claim, audit_model, claim, load_problem,
                                        model_fields)


def flat(tensors) -> torch.Tensor:
    """The tensors' entries as one float64 vector (parameter order)."""
    return torch.cat([t.detach().reshape(-1).double() for t in tensors])


def jacobian_rows(model: torch.nn.Module, x: torch.Tensor, *, chunk_size: int = 16) -> torch.Tensor:
    """[len(x) d, P] float64: row (i, k) is d z_k(x_i) / d theta at the model's parameters, one record at a
    time (``functional_call`` on x_i alone, so no record sees another), parameters in ``model.parameters()``
    order."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())

    def logits(p, xi):
        return functional_call(model, (p, buffers), (xi[None],))[0]

    jac = vmap(jacrev(logits), in_dims=(None, 0), chunk_size=chunk_size)(params, x)
    n, d = len(x), next(iter(jac.values())).shape[1]
    return torch.cat([jac[k].reshape(n, d, -1) for k in params], 2).reshape(n * d, -1).double()


def span_basis(rows: torch.Tensor) -> torch.Tensor:
    """[P, m] orthonormal basis (Householder QR, float64) whose span contains that of ``rows``' m rows. A
    rank-deficient ``rows`` only adds directions, which shrinks the complement; it never lets the span leak."""
    return torch.linalg.qr(rows.double().T, mode="reduced")[0]


def residual_norm(basis: torch.Tensor, u: torch.Tensor) -> float:
    """||(I - Q Q^T) u||, projected twice (classical Gram-Schmidt twice is enough)."""
    res = u - basis @ (basis.T @ u)
    return float((res - basis @ (basis.T @ res)).norm())


def _dpsgd_grad(model, x, y, c: Claim, *, expected_batch: float, max_grad_norm: float, generator):
    """DP-SGD's step direction: per-example gradients clipped to ``max_grad_norm``, summed, plus
    N(0, sigma^2 C^2) noise, divided by the expected batch size q n (a constant of the protocol)."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    total = [torch.zeros_like(v) for v in params.values()]
    if len(x):
        buffers = dict(model.named_buffers())

        def loss(p, xi, yi):
            return F.cross_entropy(functional_call(model, (p, buffers), (xi[None],)), yi[None])

        per = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
        norms = torch.sqrt(sum((g.reshape(len(x), -1) ** 2).sum(1) for g in per.values()))
        scale = (max_grad_norm / (norms + 1e-12)).clamp(max=1.0)
        total = [(g * scale.view(-1, *[1] * (g.dim() - 1))).sum(0) for g in per.values()]
    return [(t + c.sigma * max_grad_norm * torch.randn(t.shape, generator=generator, dtype=t.dtype)) / expected_batch
            for t in total]


def sgd_update(model, x, y, c: Claim, *, expected_batch: float, max_grad_norm: float = 1.0,
               generator: torch.Generator) -> torch.Tensor | None:
    """One SGD step (lr = ``c.lr``) of ``c.method`` on the batch (x, y), applied to ``model``; returns the
    observed theta_{t+1} - theta_t (float64, from the stored iterates), or None for Algorithm 1's empty
    batch (no update). Algorithm 1: the batch-mean Dirichlet loss at r (:func:`dirdp.mechanism.dirichlet_nll`)."""
    from dirdp.mechanism import dirichlet_nll

    params = list(model.parameters())
    before = flat(params)
    if c.dirichlet:
        if not len(x):
            return None
        loss = dirichlet_nll(model(x), y, r=c.r, alpha=c.alpha, generator=generator)
        grads = torch.autograd.grad(loss, params)
    else:
        grads = _dpsgd_grad(model, x, y, c, expected_batch=expected_batch, max_grad_norm=max_grad_norm,
                            generator=generator)
    with torch.no_grad():
        for p, g in zip(params, grads):
            p.add_(g, alpha=-c.lr)  # what torch.optim.SGD does
    return flat(params) - before


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


def _run_world(base, problem, c: Claim, adjacency: str, world: int, *, basis0, dtype, max_grad_norm, generator,
               every_update: bool = True) -> dict:
    """One training of T steps on ``world``: the every-update statistic max_t rho_t (NaN when not
    ``every_update``: S_t at each step is the cost), its largest ratio to the update's norm, the final-model
    statistic (and its ratio), and whether the canary was sampled."""
    from dirdp.sampling import PoissonSampler

    x, y, canary = problem.world(adjacency, world)
    x, d_x = x.to(dtype), problem.x.to(dtype)
    model = copy.deepcopy(base)
    theta0 = flat(model.parameters())
    sampler = PoissonSampler(len(y), c.q, generator=generator)
    stat = rel = 0.0
    sampled, moved = False, False
    for _ in range(c.steps):
        idx = sampler.sample()
        if c.dirichlet and not len(idx):
            continue  # no update: nothing to observe
        basis = None
        if every_update:
            basis = basis0 if not moved else span_basis(jacobian_rows(model, d_x))  # S_t at theta_t
        u = sgd_update(model, x[idx], y[idx], c, expected_batch=c.q * len(problem.y), max_grad_norm=max_grad_norm,
                       generator=generator)
        moved = True
        if every_update:
            rho = residual_norm(basis, u)
            stat, rel = max(stat, rho), max(rel, rho / max(float(u.norm()), 1e-300))
        sampled = sampled or bool((idx == canary).any())
    final = final_rel = 0.0
    if every_update and c.steps == 1:  # the one update is the final model: its exact statistic is the one above
        final = final_rel = math.nan
    elif moved:  # theta_T - theta_0 outside S_0 + S_T
        u = flat(model.parameters()) - theta0
        basis = span_basis(torch.cat([basis0.T, jacobian_rows(model, d_x)]))
        final = residual_norm(basis, u)
        final_rel = final / max(float(u.norm()), 1e-300)
    nan = math.nan
    return dict(world=stat if every_update else nan, rel=rel if every_update else nan, final=final,
                final_rel=final_rel, sampled=sampled)


STATS = ("world", "rel", "final", "final_rel")


def _trials(trial_ids, model_name, width, problem, claims, keys, *, seed, dtype, max_grad_norm, every_update,
            threads=None) -> dict:
    """The trials ``trial_ids`` of :func:`subspace_residuals` (one process's share): per key, lists in trial
    order of every statistic of both worlds, ``sampled1``, the step time; and the span time at theta_0."""
    if threads is not None:
        torch.set_num_threads(threads)
    acc = {k: {**{f"{s}{w}": [] for s in STATS for w in (0, 1)}, "sampled1": [], "step_time_s": 0.0} for k in keys}
    span_time, n_params, span_dim = 0.0, 0, 0
    for t in trial_ids:
        base = audit_model(model_name, width, seed=_seed(seed, t, 7), dtype=dtype)
        t0 = time.perf_counter()
        rows = jacobian_rows(base, problem.x.to(dtype))
        basis0 = span_basis(rows)
        span_time += time.perf_counter() - t0
        n_params, span_dim = rows.shape[1], rows.shape[0]
        for m, a in keys:
            t0 = time.perf_counter()
            for w in (0, 1):
                gen = torch.Generator().manual_seed(_seed(seed, t, METHODS.index(m), ADJACENCIES.index(a), w))
                out = _run_world(base, problem, claims[m], a, w, basis0=basis0, dtype=dtype,
                                 max_grad_norm=max_grad_norm, generator=gen, every_update=m in every_update)
                for s in STATS:
                    acc[(m, a)][f"{s}{w}"].append(out[s])
                if w:
                    acc[(m, a)]["sampled1"].append(out["sampled"])
            acc[(m, a)]["step_time_s"] += time.perf_counter() - t0
    return dict(acc=acc, span_time=span_time, n_params=n_params, span_dim=span_dim)


def subspace_residuals(model_name: str = "papernot_cnn", width: float = 1.0, *, methods=METHODS,
                       adjacencies=ADJACENCIES, q: float = 1.0, steps: int = 1, trials: int = 100,
                       n_records: int = 20, seed: int = 0, eps: float = 1.0, preset: str = "mnist",
                       r: float | None = None, lr: float | None = None, max_grad_norm: float = 1.0,
                       dtype: torch.dtype = torch.float64, problem=None, root=None, every_update=None,
                       workers: int = 1) -> dict:
    """The per-trial statistics of both worlds, for every (method, adjacency), ``trials`` trainings per world
    of T = ``steps`` steps at rate ``q`` (one fresh initialisation per trial index, drawn from ``seed``; the
    trial's theta_0 and S_0 are shared by its worlds, methods and adjacencies, each run has its own
    Poisson, Dirichlet and noise randomness). ``problem``: a :class:`SubspaceProblem` (default: ``n_records``
    MNIST training images and a test-image canary, :func:`load_problem`). ``every_update``: the methods whose
    every-update statistic is computed (default: all; it costs the Jacobians at every step, the final-model
    statistic only at theta_T). ``workers`` > 1 splits the trials over that many processes of one thread each;
    the result does not depend on it (each trial's randomness is drawn from its index).

    Returns {"claims": {method: Claim}, "problem", "model", "width", "norm"
    (:func:`~workflow.audit.subspace_setup.model_fields`), "n_params", "span_dim", "max_grad_norm", "trials",
    "span_time_s" (Jacobians + QR at theta_0, all trials), "wall_time_s", and (method, adjacency): dict of
    ``world0``/``world1`` (the every-update statistic, [trials] float64; NaN where not computed), ``rel0``/``rel1``
    (relative to the update's norm), ``final0``/``final1`` and ``final_rel0``/``final_rel1`` (the final-model
    statistic), ``sampled1`` (the canary was in some batch of world 1) and ``step_time_s``}."""
    t_start = time.perf_counter()
    problem = load_problem(n_records, seed=seed, root=root) if problem is None else problem
    claims = {m: claim(m, q=q, steps=steps, eps=eps, preset=preset, r=r, lr=lr) for m in methods}
    for a in adjacencies:
        problem.world(a, 1)  # checks the name
    every_update = tuple(methods) if every_update is None else tuple(every_update)
    if not (isinstance(workers, int) and workers >= 1):
        raise ValueError(f"workers must be an integer >= 1. Found {workers!r}.")
    keys = [(m, a) for m in methods for a in adjacencies]
    kw = dict(seed=seed, dtype=dtype, max_grad_norm=max_grad_norm, every_update=every_update)
    chunks = [c for c in np.array_split(np.arange(trials), min(workers, max(trials, 1))) if len(c)]
    if len(chunks) <= 1:
        parts = [_trials(range(trials), model_name, width, problem, claims, keys, **kw)]
    else:
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(len(chunks), mp_context=mp.get_context("spawn")) as pool:
            futures = [pool.submit(_trials, [int(t) for t in c], model_name, width, problem, claims, keys, threads=1,
                                   **kw) for c in chunks]
            parts = [f.result() for f in futures]  # in trial order
    out = dict(claims=claims, problem=problem, **model_fields(model_name, width), n_params=parts[0]["n_params"],
               span_dim=parts[0]["span_dim"], max_grad_norm=max_grad_norm, trials=trials,
               span_time_s=sum(p["span_time"] for p in parts), wall_time_s=time.perf_counter() - t_start,
               workers=len(parts))
    for k in keys:
        v = {}
        for name in parts[0]["acc"][k]:
            vals = [p["acc"][k][name] for p in parts]
            if name == "step_time_s":
                v[name] = sum(vals)
            else:
                v[name] = torch.tensor([x for part in vals for x in part],
                                       dtype=torch.bool if name == "sampled1" else torch.float64)
        out[k] = v
    return out
