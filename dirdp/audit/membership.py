"""Black-box membership inference at matched claimed epsilon (the loss-threshold attack of Yeom et
al. 2018, :func:`dirdp.audit.attacks.loss_threshold_attack`): on models trained here on a small
member set (:func:`membership_experiment`), and on the models the DAG released
(:func:`released_model_mia`).
"""

from __future__ import annotations

import math

import torch

from dirdp.audit.attacks import loss_threshold_attack


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
    return dict(method=method if math.isfinite(eps) else "non-private", model=model, data=f"{dataset}: {len(members)} members, {len(non_members)} non-members",
                q=q, T=steps, claimed_eps=eps, certified_eps=res["epsilon"],
                test_accuracy=res["test_accuracy"], **attack, wall_time_s=res["wall_time_s"])


def released_model_mia(result_path, *, n: int = 2000, seed: int = 0, data_root=None) -> dict:
    """:func:`loss_threshold_attack` on a model the DAG released (a run's JSON): ``n`` of its training
    records against ``n`` test records, both drawn at random."""
    import json
    from pathlib import Path

    from dirdp import training
    from dirdp.data import Split
    from dirdp.run_result import model_label, read_run

    net, data = training.load_trained(result_path, data_root=data_root)
    g = torch.Generator().manual_seed(seed)

    def pick(split):
        idx = torch.randperm(len(split), generator=g)[:n]
        return Split(split.x[idx], split.y[idx])

    res = json.loads(Path(result_path).read_text())
    eps = float(res["eps_target"])  # the JSON stores inf as "inf"
    method = res.get("method", "alg1") if math.isfinite(eps) else "non-private"
    return dict(method=method, model=f"{res['model']} ({model_label(read_run(result_path))})",
                data=f"{res['dataset']}: {n} training vs {n} test records", q=res["q"], T=res["steps"],
                claimed_eps=eps, certified_eps=float(res["epsilon"]), test_accuracy=res["test_accuracy"],
                **loss_threshold_attack(net, pick(data["train"]), pick(data["test"])))
