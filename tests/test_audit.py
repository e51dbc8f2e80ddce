"""The audit's building blocks: Clopper-Pearson, the epsilon lower bound, exact reconstruction, and the toy
trainer's DP-SGD step against Opacus'."""

import json
import math
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from dirdp import audit
from dirdp.baselines import dpsgd
from dirdp.data import load
from dirdp.mechanism import dirichlet_nll


def test_clopper_pearson_covers_at_its_level():
    gen = torch.Generator().manual_seed(0)
    n, p, trials = 50, 0.1, 2000
    ks = torch.binomial(torch.full((trials,), float(n)), torch.full((trials,), p), generator=gen).long().tolist()
    covered = sum(lo <= p <= hi for lo, hi in (audit.clopper_pearson(k, n) for k in ks))
    assert covered / trials >= 0.95  # exact intervals are conservative
    assert audit.clopper_pearson(0, 10)[0] == 0.0 and audit.clopper_pearson(10, 10)[1] == 1.0
    assert audit.clopper_pearson(0, 10)[1] == pytest.approx(1 - 0.025 ** (1 / 10))


def test_lower_bound_is_zero_when_the_test_is_a_coin_and_large_when_it_separates():
    coin = audit.epsilon_lower_bound(false_positives=500, n_negatives=1000, false_negatives=500, n_positives=1000,
                                     delta=1e-5)
    assert coin.epsilon == 0.0
    perfect = audit.epsilon_lower_bound(false_positives=0, n_negatives=1000, false_negatives=0, n_positives=1000,
                                        delta=1e-5)
    # FPR <= 1 - 0.025^(1/1000) ~ 3.7e-3, so eps >= ln((1 - 1e-5 - 3.7e-3) / 3.7e-3) ~ 5.6
    assert perfect.epsilon == pytest.approx(math.log((1 - 1e-5 - perfect.fnr_upper) / perfect.fpr_upper))
    assert 5.5 < perfect.epsilon < 5.7 and perfect.point == math.inf


def test_lower_bound_never_exceeds_the_truth_for_randomized_response():
    """A test on eps-randomized response has FPR = FNR = 1/(1 + e^eps): the bound must stay below eps
    (95% of the time; here checked on 200 independent audits at 1000 trials per world)."""
    eps, gen = 1.0, torch.Generator().manual_seed(1)
    p_err = 1 / (1 + math.e ** eps)
    over = 0
    for _ in range(200):
        fp, fn = (int(torch.binomial(torch.tensor(1000.0), torch.tensor(p_err), generator=gen)) for _ in range(2))
        over += audit.epsilon_lower_bound(false_positives=fp, n_negatives=1000, false_negatives=fn, n_positives=1000,
                                          delta=0.0).epsilon > eps
    assert over <= 10  # 5% would be 10; the union bound makes it rarer still


@pytest.fixture(scope="module")
def mnist_images(mirror_root):
    return load("mnist", "test", root=mirror_root)


def _one_step(model, x, y, loss_fn, lr=0.1):
    before = [p.detach().clone() for p in model.parameters()]
    loss_fn(model(x), y).backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
    return [p.detach() - b for p, b in zip(model.parameters(), before)]


def test_one_algorithm1_update_gives_back_the_private_image(mnist_images):
    """Section 3.3 audited: one Algorithm-1 step (alpha = 3, r = 0.2349, the paper's eps = 1
    parameters) on one real MNIST image; the first layer's update returns the image."""
    errors = []
    for i in range(20):
        torch.manual_seed(i)
        model = audit.mlp()
        x, y = mnist_images.x[i:i + 1], mnist_images.y[i:i + 1]
        gen = torch.Generator().manual_seed(i)
        dW, db = _one_step(model, x, y, lambda z, t: dirichlet_nll(z, t, r=0.2349, alpha=3.0, generator=gen))[:2]
        x_hat = audit.reconstruct_dense_first_layer(dW, db)
        errors.append(float((x_hat - x.flatten()).abs().max() / x.abs().max()))
    assert max(errors) < 1e-3  # float32 ratios of tiny updates; typically ~1e-6


@pytest.mark.slow
def test_one_dpsgd_update_at_the_same_claimed_epsilon_hides_the_image(mnist_images):
    cal = dpsgd.calibrate(eps=1.0, delta=1e-5, q=0.005, steps=20000)
    torch.manual_seed(0)
    net = audit.mlp()
    before = [p.detach().clone() for p in net.parameters()]
    module, opt = dpsgd.make_private(net, torch.optim.SGD(net.parameters(), lr=0.1), n=60000, q=0.005,
                                     noise_multiplier=cal.noise_multiplier, generator=torch.Generator().manual_seed(0))
    x, y = mnist_images.x[:1], mnist_images.y[:1]
    F.cross_entropy(module(x), y).backward()
    opt.step()
    dW, db = (p.detach() - b for p, b in zip(list(net.parameters())[:2], before[:2]))
    x_hat = audit.reconstruct_dense_first_layer(dW, db)
    cos = float(F.cosine_similarity(x_hat, x.flatten(), dim=0))
    assert abs(cos) < 0.2  # noise, not the image


def test_the_last_bias_gradient_is_the_logit_gradient_of_one_example(mnist_images):
    """What the inversion attack reads for batch 1: the Dirichlet loss's gradient with respect to the
    logits, Dirichlet sample and all, is the last layer's bias gradient."""
    torch.manual_seed(0)
    net = audit.mlp()
    logits = net(mnist_images.x[:1])
    loss = dirichlet_nll(logits, mnist_images.y[:1], r=0.2349, alpha=3.0, generator=torch.Generator().manual_seed(0))
    grads = torch.autograd.grad(loss, [logits, *net.parameters()])
    assert torch.allclose(audit.logit_grad_from_update(list(grads[1:])), grads[0], atol=1e-7)


@pytest.fixture(scope="module")
def problem(mirror_root):
    return audit.canary_problem(load("mnist", "train", root=mirror_root), n=10)


def test_canary_problem_is_a_pair_of_neighbouring_sets_with_an_orthogonal_direction(problem):
    assert len(problem.y) == 10 and float(problem.direction.norm()) == pytest.approx(1.0)
    assert float((problem.x @ problem.direction).abs().max()) < 1e-12  # every record of D' is blind to it
    assert float(problem.x_canary @ problem.direction) > 10


@pytest.mark.slow
@pytest.mark.parametrize("method", ["alg1", "dpsgd"])
def test_canary_audit_finds_algorithm1_and_does_not_accuse_dpsgd(problem, method):
    """At claimed eps = 1 (q = 0.005, T = 1000, 60 trials per world), each method set to eps = 1 by
    its own accountant: Algorithm 1's released weights separate the worlds perfectly, so the held-out
    bound is the largest 30 trials allow (2.03, twice the claim); DP-SGD's stays at or below its claim."""
    rows = audit.canary_audit(problem, method=method, q=0.005, steps=1000, eps=1.0, trials=60, seed=1)
    assert [r["statistic"] for r in rows] == ["final", "sequence"]
    for row in rows:
        assert row["certified_eps"] <= 1.0 + 1e-9 and row["held_out_per_world"] == 30 and row["trials_per_world"] == 60
    final = rows[0]
    if method == "alg1":
        most = math.log((1 - 1e-5 - (1 - 0.025 ** (1 / 30))) / (1 - 0.025 ** (1 / 30)))  # FPR = FNR = 0 of 30
        assert final["fpr"] == 0 and final["fnr"] == 0 and final["eps_lower_bound"] == pytest.approx(most) and most > 2
        # the exact bound (-T ln(1 - q) = 5.01 here) beyond what 30 held-out trials can show; its premise held
        assert all(row["eps_exact_bound"] > most and row["dprime_stat_max"] < 1e-12 for row in rows)
    else:
        assert all(row["eps_lower_bound"] <= 1.0 and math.isnan(row["eps_exact_bound"]) for row in rows)


@pytest.mark.slow
def test_the_statistic_is_exactly_zero_without_the_canary_for_algorithm1(problem):
    """Every record of D' is orthogonal to the canary direction and Algorithm 1 adds no noise to
    the parameters, so theta_T u = 0 in every D' trial; with the canary, it is sampled in most trials."""
    from dirdp import accountant

    r = accountant.rstar(eps=1.0, alpha=3.0, q=0.005, steps=1000, delta=1e-5)
    kw = dict(method="alg1", q=0.005, steps=1000, trials=40, r=r)
    neg = audit.train_linear_trials(problem, with_canary=False, seed=1, **kw)
    pos = audit.train_linear_trials(problem, with_canary=True, seed=2, **kw)
    assert float(neg["final"].max()) < 1e-12 < float(pos["final"].min())


def test_never_sampled_bound_is_the_dp_inequality_on_the_event_statistic_zero():
    """P_D'(S) = 1 <= e^eps (1 - q)^T + delta holds with equality at the bound, and fails just below it:
    10.0 at (q, T) = (0.005, 2000), 100.3 at the paper's (0.005, 20000)."""
    for q, T, expected in ((0.005, 2000, 10.0), (0.01, 2000, 20.1), (0.005, 20000, 100.3)):
        eps = audit.never_sampled_bound(q=q, steps=T, delta=1e-5)
        assert round(eps, 1) == expected
        assert math.exp(eps) * (1 - q) ** T + 1e-5 == pytest.approx(1.0, rel=1e-9)
        assert math.exp(eps - 0.01) * (1 - q) ** T + 1e-5 < 1.0


@pytest.mark.parametrize("mechanism", ["uer", "rr"])
def test_latent_audit_refutes_uer_and_not_randomized_response(mnist_images, mechanism):
    """LATENT's UER release at claimed eps = 1 tells two real records apart (its exact pair loss is in
    the thousands); randomized response at the same eps, which is sound, does not exceed eps = 1."""
    row = audit.latent_audit(mnist_images.x[0], mnist_images.x[1], eps=1.0, trials=60, mechanism=mechanism)
    if mechanism == "uer":
        assert row["certified_eps"] > 1000 and row["fpr"] == 0 and row["fnr"] == 0 and row["eps_lower_bound"] > 1.0
    else:
        assert row["certified_eps"] <= 1.0 + 1e-9 and row["eps_lower_bound"] <= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("method", ["alg1", "dpsgd"])
def test_load_trained_gives_back_the_released_model_and_its_members(tmp_path, mirror_root, monkeypatch, method):
    """Also for DP-SGD, whose released Inception has GroupNorm in place of BatchNorm."""
    from dirdp import loop, training

    monkeypatch.setenv("DIRDP_DATA", str(mirror_root))
    cfg = training.make_config("mnist", 1.0, 0, method=method, steps=3, q=0.01, width=0.125, train_subset=500,
                               eval_every=3)
    data = training.load_data(cfg, mirror_root)
    res = training.train(cfg, tmp_path / "run.json", data=data, progress=False)
    net, data2 = training.load_trained(tmp_path / "run.json")
    assert loop.params_sha256(net) == res["params_sha256"] and not net.training
    assert torch.equal(data2["train"].x, data["train"].x) and len(data2["train"]) == 500
    assert loop.accuracy(net, data["test"]) == res["test_accuracy"]


@pytest.mark.slow
@pytest.mark.parametrize("norm", ["batch", "group"])
def test_a_released_models_membership_row_says_which_normalisation_it_had(tmp_path, mirror_root, monkeypatch, norm,
                                                                          released_run):
    """Two released Algorithm-1 models of one setting differing only in --norm must not share a label in the
    membership table (README and audit_released_models.csv). BatchNorm's is the module's released run."""
    from dirdp import audit, training

    run = released_run
    if norm != "batch":
        monkeypatch.setenv("DIRDP_DATA", str(mirror_root))
        cfg = training.make_config("mnist", 1.0, 0, steps=2, q=0.01, width=0.125, train_subset=200, eval_every=2,
                                   norm=norm)
        run = tmp_path / "run.json"
        training.train(cfg, run, data=training.load_data(cfg, mirror_root), progress=False)
    assert json.loads(run.read_text())["norm"] == norm
    row = audit.released_model_mia(run, n=50)
    assert row["model"] == ("inception (reduced width (0.125x channels)" + (", GroupNorm" if norm == "group" else "")
                            + ")"), row["model"]
    assert row["method"] == "alg1" and 0.0 <= row["auc"] <= 1.0
    assert 0.0 <= row["null_auc"] <= 1.0 and row["auc_minus_null"] == pytest.approx(row["auc"] - row["null_auc"])
    # its interval: DeLong's, paired, centred on the very difference the row reports
    assert row["auc_minus_null_se"] > 0 and row["auc_minus_null_interval"].startswith("DeLong, paired")
    assert (row["auc_minus_null_ci_low"] + row["auc_minus_null_ci_high"]) / 2 == pytest.approx(row["auc_minus_null"])
    assert row["auc_minus_null_ci_high"] - row["auc_minus_null_ci_low"] == pytest.approx(2 * 1.959964 * row[
        "auc_minus_null_se"], rel=1e-5)
    assert row["score"].startswith("logit margin") and row["n_members"] == row["n_non_members"] == 50


@pytest.fixture(scope="module")
def released_run(tmp_path_factory, mirror_root):
    """A tiny released Algorithm-1 model (result JSON and weights), trained once for the module."""
    import os

    from dirdp import training

    os.environ.setdefault("DIRDP_DATA", str(mirror_root))
    folder = tmp_path_factory.mktemp("released")
    cfg = training.make_config("mnist", 1.0, 0, steps=2, q=0.01, width=0.125, train_subset=200, eval_every=2)
    training.train(cfg, folder / "run.json", data=training.load_data(cfg, mirror_root), progress=False)
    return folder / "run.json"


def _copy_run(run: Path, to: Path, *, weights: bool = True) -> Path:
    """The result (and its weights unless ``weights`` is False) copied into ``to``; the copy's result path."""
    import shutil

    from dirdp import run_result

    shutil.copy(run, to / run.name)
    if weights:
        shutil.copy(run_result.weights_path(run), run_result.weights_path(to / run.name))
    return to / run.name


@pytest.mark.slow
def test_a_released_models_row_is_kept_in_its_record_and_read_back_without_the_weights(released_run, tmp_path,
                                                                                        mirror_root):
    """With store, the row computed from the weights is written beside the run (X.json.membership); the weights gone
    (full width: not in git), the same row comes back from the record, which says where and when it was made."""
    from dirdp import run_result
    from workflow.audit import released

    run = _copy_run(released_run, tmp_path)
    row, row_from = released.released_model_row(run, n=50, seed=0, data_root=mirror_root, store=True)
    record = released.record_path(run)
    assert record.name == "run.json.membership" and record.exists() and "kept in" in row_from
    assert row == audit.released_model_mia(run, n=50, seed=0, data_root=mirror_root)  # the same code, same machine
    run_result.weights_path(run).unlink()
    again, again_from = released.released_model_row(run, n=50, seed=0, store=True)
    assert again_from.startswith(str(record)) and " at " in again_from and "cpu" in again_from
    assert again.keys() == row.keys() and all(again[k] == pytest.approx(row[k]) if isinstance(row[k], float)
                                              else again[k] == row[k] for k in row)


@pytest.mark.slow
def test_a_record_made_for_other_weights_n_or_code_gives_no_row_without_the_weights(released_run, tmp_path,
                                                                                      mirror_root, monkeypatch):
    """Another n, other weights (the result's params_sha256), other row code: the record is not read; with the
    weights the row is computed again (and, with store, the record replaced), without them there is none and the
    reason names what differs. Without store nothing is written."""
    import json

    from dirdp import run_result
    from dirdp.audit import membership
    from workflow.audit import released

    run = _copy_run(released_run, tmp_path)
    row, row_from = released.released_model_row(run, n=40, seed=0, data_root=mirror_root)
    assert row_from == "the weights" and not released.record_path(run).exists()
    released.released_model_row(run, n=40, seed=0, data_root=mirror_root, store=True)
    kept = released.record_path(run).read_text()
    run_result.weights_path(run).unlink()
    row, why = released.released_model_row(run, n=50, seed=0)
    assert row is None and "another n" in why and "weights are not in this checkout" in why
    assert released.released_model_row(run, n=40, seed=1)[0] is None
    assert released.released_model_row(run, n=40, seed=0)[0] is not None
    res = json.loads(run.read_text())
    run.write_text(json.dumps(dict(res, params_sha256="0" * 64)))  # retrained: other weights
    row, why = released.released_model_row(run, n=40, seed=0)
    assert row is None and "params_sha256" in why
    run.write_text(json.dumps(res))
    monkeypatch.setattr(membership, "code_sha256", lambda: "other code")
    row, why = released.released_model_row(run, n=40, seed=0)
    assert row is None and "code_sha256" in why
    assert released.record_path(run).read_text() == kept  # a reader never rewrites a record


def test_a_records_code_hash_ignores_docstrings_comments_and_layout_not_what_the_code_does():
    """The records of the paper-width rows can only be made again where their weights are: an edit that changes no
    code (a docstring, a comment, a line wrapped) keeps them valid, a change to what a function computes does not."""
    from dirdp.audit import membership

    code = 'def f(x):\n    """Doc."""\n    # a comment\n    return x + 1\n'
    same = 'def f(x):\n    """Other words."""\n    return (x\n            + 1)\n'
    assert membership.tree_sha256(code) == membership.tree_sha256(same)
    assert membership.tree_sha256(code) != membership.tree_sha256(code.replace("x + 1", "x + 2"))
    assert membership.tree_sha256(code) != membership.tree_sha256("@torch.no_grad()\n" + code)
    assert len(membership.code_sha256()) == 64


def test_the_committed_records_were_made_by_this_code():
    """The committed membership records (the paper-width rows, whose weights are not in git) stay valid: this code's
    fingerprint is the one they were made by, so the audit of the released models reads them back."""
    import json

    from dirdp.audit import membership

    records = sorted((Path(__file__).resolve().parents[1] / "results" / "runs").glob("*/*/*.json.membership"))
    if not records:
        pytest.skip("no committed membership record in this checkout")
    assert {json.loads(p.read_text())["key"]["code_sha256"] for p in records} == {membership.code_sha256()}


@pytest.mark.slow
def test_membership_command_keeps_each_row_and_refuses_a_run_without_weights_or_record(released_run, tmp_path,
                                                                                       mirror_root, capsys):
    """python -m workflow membership RUN.json: writes the record, says the AUC; a run with neither weights nor record,
    or a file that is no result, is one line and exit 2 before any model is audited."""
    from workflow.__main__ import main
    from workflow.audit import released

    here = tmp_path / "here"
    gone = tmp_path / "gone"
    here.mkdir(), gone.mkdir()
    run, weightless = _copy_run(released_run, here), _copy_run(released_run, gone, weights=False)
    assert main(["membership", str(run), str(weightless), "--n", "30", "--data-root", str(mirror_root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "run.model.pt: not here" in err and "Traceback" not in err
    assert not released.record_path(run).exists()  # refused before any work
    junk = tmp_path / "junk.json"
    junk.write_text("{}")
    assert main(["membership", str(junk)]) == 2 and "not a run's result" in capsys.readouterr().err
    assert main(["membership", str(run), "--n", "0"]) == 2 and "--n must be" in capsys.readouterr().err
    assert main(["membership", str(run), "--n", "30", "--data-root", str(mirror_root)]) == 0
    out = capsys.readouterr().out
    assert "AUC 0." in out and "kept in" in out and released.record_path(run).exists()
    assert main(["membership", str(run), "--n", "30"]) == 0  # kept: read back, nothing computed
    assert "from " + str(released.record_path(run)) in capsys.readouterr().out


def test_ties_are_broken_at_random_not_counted_half_or_admitted_together():
    """The issue's case: many members and non-members at one score (a confident model's float32 loss of exactly 0).
    Counting ties 1/2 pins the AUC and a threshold above the tie admits none of them (TPR 0 at low FPR by
    construction); at random, the tied block is ordered by a coin, so a score that carries no signal beyond the tie
    gives AUC ~ 0.5 and TPR ~ FPR."""
    from dirdp.audit.stats import roc_random_ties

    gen = torch.Generator().manual_seed(0)
    s_in = torch.cat([torch.zeros(800), -torch.rand(200, generator=gen)])   # 800 members tied at the top
    s_out = torch.cat([torch.zeros(800), -torch.rand(200, generator=gen)])  # and 800 non-members
    half = audit.roc_at(s_in, s_out)
    assert half["tpr_at_fpr_0.01"] == 0.0  # the old rule: the threshold sits on the tie, admitting nobody
    rnd = roc_random_ties(s_in, s_out, generator=torch.Generator().manual_seed(1))
    assert rnd["tied_records"] == 1600
    assert abs(rnd["auc"] - 0.5) < 0.04 and 0.002 < rnd["tpr_at_fpr_0.01"] < 0.03
    distinct = torch.randn(500, generator=gen)
    plain = audit.roc_at(distinct[:250] + 1, distinct[250:])
    broken = roc_random_ties(distinct[:250] + 1, distinct[250:], generator=gen)
    assert broken["auc"] == pytest.approx(plain["auc"]) and broken["tied_records"] == 0  # no ties: the same ROC


def test_the_logit_margin_is_zy_minus_the_best_other_logit():
    from dirdp.audit.membership import margin_scores

    z = torch.tensor([[2.0, 5.0, 1.0], [0.5, 0.25, 3.0]])
    assert margin_scores(z, torch.tensor([1, 0])).tolist() == [3.0, -2.5]
    assert margin_scores(z, torch.tensor([1, 0])).dtype == torch.float64


def test_roc_statistics_against_their_definitions():
    gen = torch.Generator().manual_seed(0)
    s_out = torch.randn(4000, generator=gen)
    same = audit.roc_at(torch.randn(4000, generator=gen), s_out)
    assert abs(same["auc"] - 0.5) < 0.03 and same["tpr_at_fpr_0.01"] < 0.03
    shifted = audit.roc_at(torch.randn(4000, generator=gen) + 2.0, s_out)
    assert shifted["auc"] == pytest.approx(float(torch.distributions.Normal(0, 1).cdf(torch.tensor(2 / 2 ** 0.5))),
                                           abs=0.02)  # AUC = Phi(mu / sqrt 2)
    assert audit.roc_at(torch.ones(10), torch.ones(10))["auc"] == 0.5  # ties count 1/2


@pytest.mark.slow
def test_loss_threshold_attack_sees_an_overfitted_model(mnist_images):
    members = type(mnist_images)(mnist_images.x[:64], mnist_images.y[:64])
    others = type(mnist_images)(mnist_images.x[64:1064], mnist_images.y[64:1064])
    torch.manual_seed(0)
    model = audit.mlp()
    before = audit.loss_threshold_attack(model, members, others)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(300):
        opt.zero_grad()
        F.cross_entropy(model(members.x), members.y).backward()
        opt.step()
    after = audit.loss_threshold_attack(model, members, others)
    assert abs(before["auc"] - 0.5) < 0.15 and after["auc"] > 0.8


def test_psnr_and_ssim_of_identical_and_noisy_images(mnist_images):
    x = mnist_images.x[:4]
    assert torch.allclose(audit.ssim(x, x), torch.ones(4), atol=1e-6) and (audit.psnr(x, x) > 150).all()
    noisy = x + torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    assert (audit.ssim(noisy, x) < 0.5).all() and (audit.psnr(noisy, x) < 15).all()


def test_match_to_truth_undoes_a_permutation_of_the_batch(mnist_images):
    x = mnist_images.x[:6]
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    noisy = x[perm] + 0.1 * torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    assert torch.equal(audit.match_to_truth(noisy, x), noisy[perm.argsort()])
    # more candidates than images (a dense layer's units): each image its own, in the images' order
    extra = torch.cat([noisy, torch.rand(4, *x.shape[1:], generator=torch.Generator().manual_seed(1))])
    assert torch.equal(audit.match_to_truth(extra, x), noisy[perm.argsort()])
    with pytest.raises(ValueError, match="2 candidate"):
        audit.match_to_truth(noisy[:2], x)


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["paper", "cpu", "quick", "smoke"])
def test_every_profiles_canary_settings_are_feasible_at_the_claimed_epsilon(profile):
    """Theorem 10 has a floor (lim r->0 h(r)): an audit setting below it would stop the DAG. Each
    (q, T) of each profile's audit (canary settings and the membership experiment) must certify its
    claimed eps, for Algorithm 1 and DP-SGD alike."""
    import yaml

    from dirdp import accountant

    cfg = yaml.safe_load((Path(__file__).resolve().parents[1] / "config" / f"{profile}.yaml").read_text())["audit"]
    for q, steps in [*cfg["canary"]["settings"], [cfg["membership"]["q"], cfg["membership"]["steps"]]]:
        r = accountant.rstar(eps=cfg["claimed_eps"], alpha=3.0, q=q, steps=steps, delta=1e-5)
        assert accountant.epsilon(r=r, alpha=3.0, q=q, steps=steps, delta=1e-5).epsilon <= cfg["claimed_eps"]
        assert dpsgd.calibrate(eps=cfg["claimed_eps"], delta=1e-5, q=q, steps=steps).epsilon_rdp <= cfg["claimed_eps"]


# --------------------------------------------------- the toy trainer's DP-SGD step is Opacus' step

def _synthetic_problem(n=6, d=12, seed=0):
    """A small CanaryProblem (no data needed): D' has a zero first coordinate, the canary does not."""
    g = torch.Generator().manual_seed(seed)
    x = 2 * torch.randn(n, d, generator=g, dtype=torch.float64)
    x[:, 0] = 0
    x_c = 2 * torch.randn(d, generator=g, dtype=torch.float64)
    x_c[0] = 3.0
    u = torch.zeros(d, dtype=torch.float64)
    u[0] = 1.0
    return audit.CanaryProblem(x=x, y=torch.arange(n) % 10, x_canary=x_c, y_canary=7, direction=u)


def _replayed_draws(seed, *, steps, m, d, q):
    """The toy DP-SGD trainer's random draws for one trial, replayed from its seed: per step, the
    Poisson mask (torch.rand < q over the m records) then the noise N(0, 1) of shape [1, 10, d + 1]."""
    g = torch.Generator().manual_seed(seed)
    draws = []
    for _ in range(steps):
        mask = torch.rand(1, m, generator=g)[0] < q
        draws.append((mask, torch.randn(1, 10, d + 1, dtype=torch.float64, generator=g)[0]))
    return draws


def _opacus_linear(problem, *, with_canary, draws, lr, q, max_grad_norm, noise_multiplier, monkeypatch):
    """The same training through Opacus (dirdp.baselines.dpsgd.make_private: GradSampleModule +
    DPOptimizer, mean loss, expected batch q n with n = |D'|): a float64 nn.Linear from zero on the
    replayed Poisson batches (an empty batch: dpsgd.noise_only_step), with the replayed noise
    injected in place of Opacus' own draw. Returns [10, d + 1] (weights, then the bias column)."""
    import opacus.optimizers.optimizer as dp_optimizer

    x, y = problem.x, problem.y
    if with_canary:
        x, y = torch.cat([x, problem.x_canary[None]]), torch.cat([y, torch.tensor([problem.y_canary])])
    net = torch.nn.Linear(x.shape[1], 10).double()
    torch.nn.init.zeros_(net.weight)
    torch.nn.init.zeros_(net.bias)
    module, opt = dpsgd.make_private(net, torch.optim.SGD(net.parameters(), lr=lr), n=len(problem.y), q=q,
                                     noise_multiplier=noise_multiplier, max_grad_norm=max_grad_norm)
    injected = []

    def replayed_noise(std, reference, generator=None, secure_mode=False):
        z = injected.pop(0)
        assert z.shape == reference.shape and std == noise_multiplier * max_grad_norm
        return std * z

    monkeypatch.setattr(dp_optimizer, "_generate_noise", replayed_noise)
    for mask, z in draws:
        injected[:] = [z[:, :-1], z[:, -1]]  # Opacus draws per parameter: weight, then bias
        opt.zero_grad()
        if mask.any():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Opacus' hooks: "Full backward hook is firing ... no inputs require grad"
                F.cross_entropy(module(x[mask]), y[mask]).backward()
            opt.step()
        else:
            dpsgd.noise_only_step(module, opt)
        assert not injected
    return torch.cat([net.weight.detach(), net.bias.detach()[:, None]], 1)


@pytest.mark.parametrize("with_canary", [False, True])
@pytest.mark.parametrize("q, noise_multiplier", [(1.0, 0.0), (0.5, 0.0), (0.5, 0.8)])
def test_the_toy_dpsgd_trainer_takes_opacus_steps(monkeypatch, with_canary, q, noise_multiplier):
    """train_linear_trials' vectorised DP-SGD (per-example l2 norm over all parameters, clip to C,
    sum, add N(0, sigma^2 C^2), divide by q |D'|) against Opacus' DPOptimizer on the same batches and
    the same noise, several steps, with clipping inactive (C = 1e3) and active (C = 1). The one
    difference is the clip factor's stabiliser, C / (||g|| + 1e-12) here and + 1e-6 in Opacus (a
    relative 1e-6 / ||g||): with Opacus' value the weights agree to float64 rounding."""
    from dirdp.audit import canary

    problem, steps, lr, seed = _synthetic_problem(), 4, 0.1, 3
    m, d = len(problem.y) + with_canary, problem.x.shape[1]
    draws = _replayed_draws(seed, steps=steps, m=m, d=d, q=q)
    assert q == 1.0 or any(not mask.all() for mask, _ in draws)  # Poisson batches of varying size
    for C in (1e3, 1.0):
        kw = dict(with_canary=with_canary, method="dpsgd", q=q, steps=steps, trials=1, lr=lr,
                  noise_multiplier=noise_multiplier, max_grad_norm=C, seed=seed)
        toy = audit.train_linear_trials(problem, **kw)["weights"][0]
        with monkeypatch.context() as mp:
            ref = _opacus_linear(problem, with_canary=with_canary, draws=draws, lr=lr, q=q, max_grad_norm=C,
                                 noise_multiplier=noise_multiplier, monkeypatch=mp)
        assert float(ref.abs().max()) > 1e-3
        if C == 1e3:  # no example clipped: the stabiliser plays no part
            assert torch.allclose(toy, ref, rtol=1e-12, atol=1e-15)
        else:
            assert torch.allclose(toy, ref, rtol=1e-5, atol=1e-12)
            monkeypatch.setattr(canary, "_CLIP_STABILISER", 1e-6)
            assert torch.allclose(audit.train_linear_trials(problem, **kw)["weights"][0], ref, rtol=1e-12, atol=1e-15)
            monkeypatch.undo()


def test_the_inversion_dpsgd_step_is_opacus_step(monkeypatch):
    """The per-example loop of the inversion's DP-SGD update (noise 0) against Opacus on one batch."""
    from dirdp.audit.inversion import _parameter_update

    problem = _synthetic_problem()
    x, y, d = problem.x, problem.y, problem.x.shape[1]
    draws = [(torch.ones(len(y), dtype=torch.bool), torch.zeros(10, d + 1, dtype=torch.float64))]
    for C in (1e3, 1.0):
        ref = _opacus_linear(problem, with_canary=False, draws=draws, lr=1.0, q=0.5, max_grad_norm=C,
                             noise_multiplier=0.0, monkeypatch=monkeypatch)
        net = torch.nn.Linear(d, 10).double()
        torch.nn.init.zeros_(net.weight)
        torch.nn.init.zeros_(net.bias)
        gw, gb = _parameter_update(net, x, y, method="dpsgd", noise_multiplier=0.0, max_grad_norm=C,
                                   expected_batch=0.5 * len(y), generator=torch.Generator().manual_seed(0))
        assert torch.allclose(-torch.cat([gw, gb[:, None]], 1), ref, rtol=1e-5 if C == 1.0 else 1e-12, atol=1e-15)


@pytest.mark.slow
def test_one_calibration_sets_each_method_to_the_claimed_epsilon():
    """canary._noise_for: the audit's single eps -> (r* | sigma) calibration, each certified by its accountant."""
    from dirdp import accountant
    from dirdp.audit.canary import _noise_for

    kw = dict(eps=1.0, q=0.005, steps=1000, delta=1e-5)
    alg1, sgd = _noise_for("alg1", alpha=3.0, **kw), _noise_for("dpsgd", **kw)
    assert alg1.r == accountant.rstar(alpha=3.0, **kw) and alg1.noise_multiplier is None
    assert sgd.noise_multiplier == dpsgd.calibrate(**kw).noise_multiplier and sgd.r is None
    assert alg1.certified_eps <= 1.0 + 1e-9 and sgd.certified_eps <= 1.0 + 1e-9
    with pytest.raises(ValueError, match="alg1"):
        _noise_for("adam", **kw)


def test_dense_reconstruction_reads_every_image_back(mnist_images):
    """The notebook's analytic reconstruction, at the paper's eps = 1 MNIST parameters (r* = 0.2349)."""
    rows, found = audit.dense_reconstruction(mnist_images.x[:4], mnist_images.y[:4], eps=1.0, delta=1e-5)
    assert found.shape == mnist_images.x[:4].shape and len(rows) == 4
    assert all(r["rstar"] == pytest.approx(0.2349, abs=1e-4) and r["max_rel_error"] < 1e-5 for r in rows)
    assert all(r["attack"] == "dense_first_layer" and r["model"] == "mlp" and r["method"] == "alg1" for r in rows)
    assert torch.allclose(found, mnist_images.x[:4], atol=1e-5 * float(mnist_images.x[:4].abs().max()))


def test_a_dense_layer_gives_back_exactly_the_images_of_a_batch_that_a_unit_sees_alone(mnist_images):
    """One Algorithm-1 step on a batch of 8: a ReLU unit active for one image of the batch alone carries that image
    exactly (Delta W1[j] / Delta b1[j] = x_i), any other a mixture; DP-SGD's step at the same claim carries none."""
    from dirdp.audit.attacks import mlp

    x, y = mnist_images.x[:8], mnist_images.y[:8]
    rows, found = audit.dense_reconstruction(x, y, eps=1.0, delta=1e-5, batch_size=8)
    assert found.shape == x.shape and [r["image"] for r in rows] == list(range(8))
    torch.manual_seed(0)
    with torch.no_grad():
        alone = ((mlp()[:2](x) > 0).sum(0) == 1)  # the units of the step's MLP active for one image only
    exact = [r["max_rel_error"] < 1e-4 for r in rows]
    assert 0 < sum(exact) <= int(alone.sum()) and not all(exact)
    assert all(r["candidates"] <= 100 and r["batch_size"] == 8 for r in rows)
    noisy = audit.dense_reconstruction(x, y, eps=1.0, delta=1e-5, method="dpsgd", batch_size=8)[0]
    assert max(r["psnr"] for r in noisy) < 20
    # a remainder is left out: 10 images in batches of 8 are one batch
    assert len(audit.dense_reconstruction(mnist_images.x[:10], mnist_images.y[:10], eps=1.0, delta=1e-5,
                                          batch_size=8)[0]) == 8


def test_dense_reconstruction_of_a_dpsgd_step_is_noise(mnist_images):
    """The control: the same ratio of DP-SGD's update at the same claim (its noise multiplier for q, T) is noise, far
    from every image (PSNR near that of an unrelated image), while Algorithm 1's is the image."""
    x, y = mnist_images.x[:4], mnist_images.y[:4]
    rows, found = audit.dense_reconstruction(x, y, eps=1.0, delta=1e-5, method="dpsgd")
    assert all(r["noise_multiplier"] > 1 and r["rstar"] is None for r in rows)
    assert max(r["psnr"] for r in rows) < 20 and min(r["max_rel_error"] for r in rows) > 0.5
    alg1 = audit.dense_reconstruction(x, y, eps=1.0, delta=1e-5)[0]
    assert min(r["psnr"] for r in alg1) > 100
