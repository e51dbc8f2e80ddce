"""Black-box membership inference at matched claimed epsilon (the loss-threshold attack of Yeom et
al. 2018, :func:`dirdp.audit.attacks.loss_threshold_attack`): on models trained here on a small
member set (:func:`membership_experiment`), and on a released model, a run's result with its weights beside it
(:func:`released_model_mia`); :func:`code_sha256` fingerprints the code that makes such a row, so that a row kept
beside its run can tell whether this code would make it again.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import json
import math
import textwrap
from pathlib import Path

import torch
import torch.nn.functional as F

from dirdp import methods
from dirdp.audit.attacks import loss_threshold_attack

NON_PRIVATE = "non-private"  # the method column of a row at eps = inf (whatever method trained it): no method's key


def membership_experiment(members, non_members, *, method: str, eps: float, q: float, steps: int, out_dir,
                          dataset: str = "mnist", model: str = "papernot_cnn", seed: int = 0) -> dict:
    """Black-box membership inference at matched claimed epsilon: train ``model`` on ``members`` only
    (Algorithm 1 at r*, DP-SGD calibrated by Opacus, or non-private cross-entropy at eps = inf; the
    same q, T, lr, sampling) with :func:`dirdp.training.train`, then attack the released model with
    :func:`loss_threshold_attack` on the members against as many ``non_members``."""
    from pathlib import Path

    from dirdp import training

    cfg = training.make_config(dataset, eps, seed, method=method, model=model, q=q, steps=steps,
                               eval_every=steps, checkpoint_every=steps + 1)
    out = Path(out_dir) / f"{method}_eps{eps:g}_seed{seed}.json"
    res = training.train(cfg, out, data={"train": members, "test": non_members}, progress=False)
    net, _ = training.load_trained(out, with_data=False)  # the members and non-members are given
    attack = loss_threshold_attack(net, members, non_members)
    return dict(method=method if math.isfinite(eps) else NON_PRIVATE, model=model, data=f"{dataset}: {len(members)} members, {len(non_members)} non-members",
                q=q, T=steps, claimed_eps=eps, certified_eps=res["epsilon"],
                test_accuracy=res["test_accuracy"], **attack, wall_time_s=res["wall_time_s"])


@torch.no_grad()
def _logits(model, split, batch: int = 1000) -> torch.Tensor:
    return torch.cat([model(split.x[i:i + batch]) for i in range(0, len(split), batch)])


def margin_scores(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The logit margin z_y - max_{k != y} z_k in float64: unlike the float32 cross-entropy, which is exactly 0 for
    every confidently right record, it does not saturate, so confident models' records do not tie."""
    z = logits.double()
    zy = z.gather(1, y.view(-1, 1)).squeeze(1)
    other = z.scatter(1, y.view(-1, 1), -math.inf).amax(1)
    return zy - other


def released_model_mia(result_path, *, n: int = 2000, seed: int = 0, data_root=None) -> dict:
    """Membership inference on a model the DAG released (a run's JSON): ``n`` of its training records against ``n``
    test records, both drawn at random. The score is the float64 logit margin (:func:`margin_scores`), ties broken at
    random (:func:`dirdp.audit.stats.roc_random_ties`). Beside it, the **null**: the same score and records on the
    same architecture at initialisation (:func:`dirdp.training.untrained_model`), which has seen no record, so its AUC measures how
    the score tells the training split from the test split without any membership (the splits differ: a trained
    model may read that difference more strongly than an untrained one, so the null is the split effect as an
    untrained model sees it, not a bound on it). ``auc_minus_null`` comes with its 95% interval
    (``auc_minus_null_ci_low``/``_high``, and ``auc_minus_null_se``): DeLong's for two AUCs of the same records
    (:func:`dirdp.audit.stats.paired_auc_difference`), computed on the tie-broken rankings the AUCs are read from,
    so it covers the draw of the records, not the training seed (one model) nor the tie breaks. And the old score,
    the float32 loss (Yeom et al. 2018), with its ties counted 1/2 (``loss_auc``) and the number of tied records
    (``loss_tied_records``)."""
    import json
    from pathlib import Path

    from dirdp import training
    from dirdp.audit.stats import paired_auc_difference, random_tie_ranks, roc_at, roc_random_ties, tied_records
    from dirdp.data import Split
    from dirdp.run_result import model_label, read_run

    net, data = training.load_trained(result_path, data_root=data_root)
    g = torch.Generator().manual_seed(seed)

    def pick(split):
        idx = torch.randperm(len(split), generator=g)[:n]
        return Split(split.x[idx], split.y[idx])

    members, others = pick(data["train"]), pick(data["test"])
    res = json.loads(Path(result_path).read_text())
    eps = float(res["eps_target"])  # the JSON stores inf as "inf"
    method = res.get("method", methods.DEFAULT) if math.isfinite(eps) else NON_PRIVATE
    z_in, z_out = _logits(net, members), _logits(net, others)
    trained = margin_scores(z_in, members.y), margin_scores(z_out, others.y)
    attack = roc_random_ties(*trained, generator=torch.Generator().manual_seed(seed + 1))
    null_net, _ = training.untrained_model(result_path)
    untrained = (margin_scores(_logits(null_net, members), members.y),
                 margin_scores(_logits(null_net, others), others.y))
    null = roc_random_ties(*untrained, generator=torch.Generator().manual_seed(seed + 2))
    # AUC - null with DeLong's interval for two AUCs of the same records, on the very rankings the AUCs were read from
    paired = paired_auc_difference(*random_tie_ranks(*trained, generator=torch.Generator().manual_seed(seed + 1)),
                                   *random_tie_ranks(*untrained, generator=torch.Generator().manual_seed(seed + 2)))
    loss_in = -F.cross_entropy(z_in.float(), members.y, reduction="none")  # the float32 loss score, as before
    loss_out = -F.cross_entropy(z_out.float(), others.y, reduction="none")
    loss = roc_at(loss_in, loss_out)
    return dict(method=method, model=f"{res['model']} ({model_label(read_run(result_path))})",
                data=f"{res['dataset']}: {n} training vs {n} test records", q=res["q"], T=res["steps"],
                claimed_eps=eps, certified_eps=float(res["epsilon"]), test_accuracy=res["test_accuracy"],
                score="logit margin (float64), ties broken at random", **attack,
                null_model="initialisation (same architecture, the run's seed)", null_auc=null["auc"],
                null_tpr_at_fpr_0_01=null["tpr_at_fpr_0.01"], null_tied_records=null["tied_records"],
                auc_minus_null=attack["auc"] - null["auc"], auc_minus_null_se=paired["se"],
                auc_minus_null_ci_low=paired["ci_low"], auc_minus_null_ci_high=paired["ci_high"],
                auc_minus_null_interval="DeLong, paired (the same records), 95%", loss_auc=loss["auc"],
                loss_tpr_at_fpr_0_01=loss["tpr_at_fpr_0.01"], loss_tied_records=tied_records(torch.cat([loss_in, loss_out])))


def code_sha256() -> str:
    """SHA-256 of the code that makes a row from weights: the syntax tree of each function it runs here
    (:func:`released_model_mia`, :func:`margin_scores`, :func:`_logits` and the ROC summaries and DeLong's interval
    of :mod:`dirdp.audit.stats`), without docstrings, comments or layout (:func:`tree_sha256`). A record made by other
    code is not used; an edit anywhere else keeps the records (the paper-width ones can only be made again where
    their weights are)."""
    from dirdp.audit import stats

    h = hashlib.sha256()
    for fn in (_logits, margin_scores, released_model_mia, stats.roc_at, stats.roc_random_ties, stats.tied_records,
               stats.random_tie_ranks, stats._midranks, stats.delong_components, stats.paired_auc_difference):
        h.update(tree_sha256(inspect.getsource(inspect.unwrap(fn))).encode())
    return h.hexdigest()


def tree_sha256(source: str) -> str:
    """SHA-256 of the syntax tree of ``source`` (a function's, decorators included) with its docstring removed:
    comments, docstrings, line breaks and indentation do not change it, a change to what the code does does."""
    tree = ast.parse(textwrap.dedent(source))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node) is not None:
            node.body = node.body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree, annotate_fields=False).encode()).hexdigest()
