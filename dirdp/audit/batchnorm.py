"""The BatchNorm channel: what one record does to the *other* records' releases, and what
the running statistics of a released model carry, both outside the Dirichlet mechanism.

Theorem 10 treats each release p~_i ~ Dir(r s_i + alpha 1_d) as a function of record i alone. In train mode a
BatchNorm layer normalises with the statistics of the whole batch, so s_i = softmax(z_i(B)) depends on every
record of the batch B: replacing record j by c moves every s_i, i != j. The joint release of the others'
samples is a product of independent Dirichlets, so its Renyi divergence of order lambda adds up,

    D_lambda(others) = sum_{i in B, i != j} D_lambda( Dir(r s_i + alpha) || Dir(r s_i' + alpha) ),

    D_lambda(Dir(a) || Dir(b)) = 1/(lambda - 1) sum_k [ lnG(lambda a_k + (1 - lambda) b_k)
                                                         - lambda lnG(a_k) - (1 - lambda) lnG(b_k) ]

(the lnGamma of the sums cancel: sum_k a_k = sum_k b_k = r + d alpha), finite where every lambda a_k +
(1 - lambda) b_k > 0, which for simplex inputs is Lemma 9's lambda < 1 + alpha / r. Lemma 9's per-step bound
eps_M(lambda) = lambda r^2 psi'(alpha - (lambda - 1) r) (:func:`dirdp.accountant.dirichlet_rdp`) bounds that
divergence for any one pair of simplex inputs: it is the budget of ONE record's release. :func:`batch_influence`
puts the others' summed divergence, measured on real batches at the paper's protocol, beside it.

The running statistics (``running_mean``, ``running_var``) are exponential averages of batch statistics of
private inputs, released with the model and touched by no noise. :func:`running_stats_audit` distinguishes
D from its neighbour by them alone after one step (white box, q = 1), and :func:`running_mean_membership`
asks how much the first BatchNorm layer's running mean tells of the records of the last batches of a released
model.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn


def dirichlet_renyi(a: torch.Tensor, b: torch.Tensor, order: float) -> torch.Tensor:
    """D_lambda(Dir(a) || Dir(b)) along the last axis (float64), for ``a`` and ``b`` with equal sums; +inf where
    the order is not admissible (some lambda a_k + (1 - lambda) b_k <= 0)."""
    a, b = a.double(), b.double()
    if not torch.allclose(a.sum(-1), b.sum(-1), rtol=1e-6, atol=1e-9):
        raise ValueError("the two Dirichlet parameter vectors must have equal sums (r s + alpha on the simplex).")
    if not order > 1:
        raise ValueError(f"the Renyi order must be > 1. Found {order}.")
    mix = order * a + (1 - order) * b
    ok = (mix > 0).all(-1)
    terms = torch.lgamma(mix.clamp_min(1e-300)) - order * torch.lgamma(a) - (1 - order) * torch.lgamma(b)
    out = (terms.sum(-1) / (order - 1)).clamp_min(0.0)  # >= 0: a negative value is round-off
    return torch.where(ok, out, torch.full_like(out, math.inf))


def release_divergence(s: torch.Tensor, s_other: torch.Tensor, *, r: float, alpha: float, order: float) -> torch.Tensor:
    """Per row: D_lambda(Dir(r s + alpha) || Dir(r s' + alpha)), the Renyi divergence of one release of Mechanism 8
    when its softmax input moves from ``s`` to ``s_other``."""
    return dirichlet_renyi(r * s + alpha, r * s_other + alpha, order)


def _train_mode_probs(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """softmax of the model's logits on the batch ``x`` in train mode (BatchNorm: the batch's statistics), float64;
    the model's running statistics are left as they were."""
    saved = {k: v.clone() for k, v in model.named_buffers()}
    model.train()
    with torch.no_grad():
        z = model(x)
        for k, v in model.named_buffers():
            v.copy_(saved[k])
    return torch.softmax(z.double(), -1), z.double()


def batch_influence(model: nn.Module, x: torch.Tensor, *, candidates: torch.Tensor, q: float, trials: int, r: float,
                    alpha: float, order: int, seed: int = 0) -> list[dict]:
    """For ``trials`` Poisson batches B of the records ``x`` at rate ``q`` (empty batches redrawn): replace one record
    j of B (uniform) by a record of ``candidates`` (uniform) and measure, on the other records of B, the change of
    their logits (max over B \\ {j} of max_k |z_ik - z'_ik|, and its median over B \\ {j}) and the Renyi divergence
    of order ``order`` of their joint release (the sum above), beside record j's own release divergence and
    Lemma 9's bound eps_M(order). One dict per trial."""
    from dirdp.accountant import dirichlet_rdp

    model = copy.deepcopy(model)
    lemma9 = float(dirichlet_rdp(orders=np.array([order]), r=r, alpha=alpha)[0])
    g = torch.Generator().manual_seed(seed)
    rows = []
    for t in range(trials):
        idx = torch.empty(0, dtype=torch.long)
        while len(idx) < 2:  # one record to replace and at least one other
            idx = torch.nonzero(torch.rand(len(x), generator=g) < q).squeeze(1)
        j = int(torch.randint(len(idx), (1,), generator=g))
        c = int(torch.randint(len(candidates), (1,), generator=g))
        xb = x[idx]
        xb2 = xb.clone()
        xb2[j] = candidates[c]
        s, z = _train_mode_probs(model, xb)
        s2, z2 = _train_mode_probs(model, xb2)
        others = torch.arange(len(idx)) != j
        dz = (z - z2).abs().amax(-1)[others]
        div = release_divergence(s[others], s2[others], r=r, alpha=alpha, order=order)
        own = float(release_divergence(s[j:j + 1], s2[j:j + 1], r=r, alpha=alpha, order=order)[0])
        rows.append(dict(trial=t, batch_size=len(idx), max_logit_change=float(dz.max()),
                         median_logit_change=float(dz.median()), others_rdp=float(div.sum()),
                         others_rdp_max=float(div.max()), own_rdp=own, lemma9_rdp=lemma9, order=order))
    return rows


def first_batchnorm(model: nn.Module) -> tuple[nn.Module, nn.modules.batchnorm._BatchNorm]:
    """(the modules before it as one function, the first BatchNorm layer) of a model whose first BatchNorm follows
    its first convolution directly (the paper's Inception and ResNets: conv -> BN -> ReLU)."""
    for module in model.modules():
        if isinstance(module, nn.modules.batchnorm._BatchNorm):
            break
    else:
        raise ValueError("the model has no BatchNorm layer (GroupNorm, or none): it keeps no running statistics.")
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    return convs[0], module


def running_stats_audit(model_fn, x: torch.Tensor, canary: torch.Tensor, *, trials: int, adjacency: str = "add",
                        seed: int = 0, delta: float = 1e-5) -> dict:
    """White-box distinguishing test on the running statistics alone, one training step at q = 1 (the batch is D):
    D (world 0) vs D + canary (``add``) or D with its last record replaced by it (``replace``), ``trials`` fresh
    initialisations per world (``model_fn(seed)`` builds one). The auditor knows D and theta_0, so world 0's
    statistics after the step are known: the test statistic is the distance of the released first-layer
    ``running_mean`` and ``running_var`` from them. No noise touches them, so the two worlds separate at every
    trial (the Dirichlet sample changes the parameters, not these buffers). Returns the held-out epsilon lower
    bound (:func:`dirdp.audit.stats.audit_threshold`) and the statistic's range in each world."""
    from dirdp.audit.stats import audit_threshold, epsilon_lower_bound

    if adjacency not in ("add", "replace"):
        raise ValueError(f"adjacency must be 'add' or 'replace'. Found {adjacency!r}.")
    world1 = torch.cat([x, canary[None]]) if adjacency == "add" else torch.cat([x[:-1], canary[None]])
    stats = {0: [], 1: []}
    for t in range(trials):
        for w, batch in ((0, x), (1, world1)):
            net = model_fn(int(np.random.SeedSequence([seed, t]).generate_state(1)[0]))
            ref = copy.deepcopy(net)
            _, bn = first_batchnorm(net)
            _, bn_ref = first_batchnorm(ref)
            net.train(), ref.train()
            with torch.no_grad():
                net(batch)  # the training step's forward pass: what updates the running statistics
                ref(x)  # the auditor's prediction for world 0
            d = torch.cat([bn.running_mean - bn_ref.running_mean, bn.running_var - bn_ref.running_var])
            stats[w].append(float(d.double().norm()))
    s0, s1 = (torch.tensor(stats[w], dtype=torch.float64) for w in (0, 1))
    lb, thr = audit_threshold(s0.clamp_min(1e-300).log10(), s1.clamp_min(1e-300).log10(), delta=delta)
    ceiling = epsilon_lower_bound(false_positives=0, n_negatives=lb.n_negatives, false_negatives=0,
                                  n_positives=lb.n_positives, delta=delta).epsilon
    # exact: world 0's statistic is identically 0 (the auditor's recomputation of the same deterministic forward
    # pass), so for S = {statistic != 0}, P_D'(S) = 0 while P_D(S) = 1 at q = 1 (the canary is in the one batch):
    # no finite eps satisfies P_D(S) <= e^eps P_D'(S) + delta. Checked on every trial, not assumed.
    p1 = float((s1 > 0).double().mean())
    exact = math.inf if float(s0.max()) == 0.0 and p1 > delta else math.nan
    return dict(adjacency=adjacency, trials_per_world=trials, held_out_per_world=lb.n_negatives,
                eps_lower_bound=lb.epsilon, ceiling=ceiling, fpr=lb.fpr, fnr=lb.fnr,
                stat0_max=float(s0.max()), stat1_min=float(s1.min()), stat1_median=float(s1.median()),
                exact_bound=exact, world1_nonzero_fraction=p1,
                exact_rests_on="P_D'(statistic != 0) = 0: world 0's statistics are recomputed exactly; "
                               "P_D(statistic != 0) = 1 at q = 1: the canary is in the one batch")


def channel_means(conv: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """[n, C] float64: the per-channel spatial mean of the first convolution's output on each record, which is
    what the first BatchNorm layer averages into its running mean."""
    with torch.no_grad():
        return conv(x).double().mean((2, 3))


def running_mean_membership(net: nn.Module, train, test, *, r: float | None, alpha: float, q: float, lr: float,
                            steps: int, trials: int, seed: int = 0) -> dict:
    """Membership of the last batch, read from the first BatchNorm layer's running mean of a released model.

    Each trial continues the training of ``net`` (a released model) for ``steps`` steps of Algorithm 1 (at scale
    ``r``; None: non-private cross-entropy) on Poisson batches of ``train`` at rate ``q``, so that the running mean
    at the end is made of batches the test knows (weight 0.9^steps is left on the released one). The members
    are the records of the last batch, the non-members as many records of ``test``. The score of a record x is
    sum_c (phi_c(x) - mu_c)(m_c - mu_c) / v_c: phi the first convolution's channel means on x (at the final
    parameters), mu and v their mean and variance over ``test``, m the released running mean: a record of the
    last batch pulled m towards phi(x) with weight momentum / |B|. Returns AUC and TPR at 1% and 0.1% FPR
    over all trials' records (:func:`dirdp.audit.stats.roc_at`)."""
    import torch.nn.functional as F

    from dirdp.audit.stats import roc_at
    from dirdp.mechanism import dirichlet_nll

    g = torch.Generator().manual_seed(seed)
    member_scores, other_scores, sizes = [], [], []
    for _ in range(trials):
        model = copy.deepcopy(net).train()
        opt = torch.optim.SGD(model.parameters(), lr=lr)
        last = None  # the last non-empty batch: the last to move the running mean (an empty one makes no step)
        for _ in range(steps):
            idx = torch.nonzero(torch.rand(len(train), generator=g) < q).squeeze(1)
            if not len(idx):
                continue
            last = idx
            logits = model(train.x[idx])
            loss = (dirichlet_nll(logits, train.y[idx], r=r, alpha=alpha, generator=g) if r is not None
                    else F.cross_entropy(logits, train.y[idx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
        if last is None:
            continue  # every batch of this trial was empty: nothing to score
        idx = last
        conv, bn = first_batchnorm(model)
        pool = channel_means(conv, test.x)
        mu, var = pool.mean(0), pool.var(0).clamp_min(1e-12)
        m = bn.running_mean.double()
        non = torch.randperm(len(test), generator=g)[: len(idx)]

        def score(feats):
            return ((feats - mu) * (m - mu) / var).sum(1)

        member_scores.append(score(channel_means(conv, train.x[idx])))
        other_scores.append(score(pool[non]))
        sizes.append(len(idx))
    if not member_scores:
        raise ValueError(f"every batch of every trial was empty (q={q}, {len(train)} records, {steps} steps): raise "
                         "steps or trials.")
    members, others = torch.cat(member_scores), torch.cat(other_scores)
    roc = roc_at(members, others)
    return dict(members=len(members), non_members=len(others), mean_batch=float(np.mean(sizes)), **roc)
