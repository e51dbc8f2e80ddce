"""The audit on the paper's own model (workflow.audit.first_layer, dirdp.audit.control.dpsgd_control): a zero record
never moves the bias-free first convolution nor the first running mean under the training code as it is, the canary
does; with a bias on every convolution the first convolution's weights still never move on zero records (the test
then reads the weights only); the trial records resume; the rows' bounds are the statistics' own; and the DP-SGD
control has power without exceeding DP-SGD's own epsilon."""

import json
import math

import pytest
import torch
from scipy import stats

from dirdp.audit import canary, control
from dirdp.audit.stats import audit_threshold, epsilon_lower_bound
from dirdp.data import load
from workflow.audit import first_layer

from conftest import pinned_torch_threads

one_thread = pinned_torch_threads(1, "module")

TINY = dict(width=0.0625, steps=60)  # the paper's q; 60 steps


@pytest.fixture(scope="module")
def canary_image(mirror_root):
    test = load("mnist", "test", root=mirror_root)
    return test.x[0], int(test.y[0]), test


@pytest.mark.slow
@pytest.mark.parametrize("bf16", [True, False])
def test_zero_records_train_the_model_but_never_move_the_first_convolution_or_running_mean(canary_image, bf16):
    x_c, y_c, test = canary_image
    s = first_layer.Setting(n_zero=400, bf16=bf16, **TINY)  # about 100 zero records sampled over the 60 steps
    x, y, c = first_layer.worlds(s, x_c, y_c, "add")[0]
    assert c == -1 and float(x.abs().max()) == 0.0
    rec = first_layer.trial(s, x, y, c, seed=3, test=test)
    assert rec["empty_batches"] < 60 and rec["others_moved"] > 0  # batches of zero records did train the model
    assert rec["first_conv_changed"] == 0 and rec["first_conv_max_change"] == 0.0  # bit for bit
    assert rec["running_mean_abs_max"] == 0.0 and rec["finite"]


@pytest.mark.slow
@pytest.mark.parametrize("adjacency", ["add", "replace"])
def test_the_canary_moves_both_once_it_is_sampled(canary_image, adjacency):
    x_c, y_c, test = canary_image
    s = first_layer.Setting(n_zero=3, **TINY)
    x, y, c = first_layer.worlds(s, x_c, y_c, adjacency)[1]
    assert torch.equal(x[c], x_c) and int(y[c]) == y_c and len(x) == (4 if adjacency == "add" else 3)
    sampled = []
    for seed in (0, 1, 2, 7):  # 60 steps at q = 1/240 sample the canary in about one trial in five: these seeds
        rec = first_layer.trial(s, x, y, c, seed=seed, test=test)  # give both outcomes under either adjacency
        assert (rec["first_conv_changed"] > 0) == (rec["canary_sampled"] > 0)
        assert (rec["running_mean_abs_max"] > 0) == (rec["canary_sampled"] > 0)
        sampled.append(rec["canary_sampled"] > 0)
    assert any(sampled) and not all(sampled), sampled


def test_records_resume_and_rows_are_the_statistics_of_the_counts(canary_image, tmp_path, mirror_root):
    s = first_layer.Setting(n_zero=1, width=0.0625, steps=30)
    path = tmp_path / "trials.jsonl"
    first_layer.run_trials(s, trials=2, records=path, data_root=mirror_root, progress=False)
    assert len(path.read_text().splitlines()) == 2 * 2 * 2  # trials x worlds x adjacencies
    recs = first_layer.run_trials(s, trials=3, records=path, data_root=mirror_root, progress=False)
    assert len(recs) == 12 and len(path.read_text().splitlines()) == 12  # only the third trials ran
    keys = {(r["adjacency"], r["world"], r["trial"]) for r in map(json.loads, path.read_text().splitlines())}
    assert len(keys) == 12
    other = first_layer.Setting(n_zero=2, width=0.0625, steps=30)
    assert first_layer.run_trials(other, trials=0, records=path, progress=False) == []  # another setting's: none
    for row in first_layer.rows(s, recs):
        mine = [r for r in recs if r["adjacency"] == row["adjacency"]]
        fp = sum(first_layer.statistic(r, row["statistic"]) for r in mine if r["world"] == 0)
        fn = sum(not first_layer.statistic(r, row["statistic"]) for r in mine if r["world"] == 1)
        assert (row["false_positives"], row["false_negatives"], row["trials_per_world"]) == (fp, fn, 3)
        assert fp == 0 and math.isinf(row["exact_bound"])  # world 0 is exactly 0; P_D(moved) > delta at T = 30
        want = epsilon_lower_bound(false_positives=fp, n_negatives=3, false_negatives=fn, n_positives=3,
                                   delta=row["matched_claim_delta"]).epsilon
        assert row["eps_lower_bound"] == pytest.approx(want)
        assert row["never_sampled_probability"] == pytest.approx((1 - 250 / 60000) ** 30)
        assert row["verdict_exact"] == "claim violated: no finite eps for this delta"
    replace = next(r for r in first_layer.rows(s, recs) if r["adjacency"] == "replace")
    assert replace["matched_claim_eps"] == pytest.approx(2 * replace["claimed_eps"])  # group privacy


def test_the_key_of_a_setting_without_conv_bias_is_what_the_committed_trials_carry():
    assert first_layer.Setting().key() == ('{"bf16": true, "canary": 0, "dataset": "mnist", "eps": 1.0, "n_zero": 1, '
                                           '"steps": null, "width": 1.0}')
    assert first_layer.Setting(width=0.25, bf16=False).key() == (
        '{"bf16": false, "canary": 0, "dataset": "mnist", "eps": 1.0, "n_zero": 1, "steps": null, "width": 0.25}')
    biased = first_layer.Setting(conv_bias=True)
    assert json.loads(biased.key()) == dict(json.loads(first_layer.Setting().key()), conv_bias=True)
    # the variants train from the base setting's seeds (a paired design)
    assert first_layer.trial_seed(biased, "add", 0, 3) == first_layer.trial_seed(first_layer.Setting(), "add", 0, 3)


@pytest.mark.slow
@pytest.mark.parametrize("bf16", [True, False])
def test_with_a_bias_on_every_convolution_zero_records_still_never_move_the_first_convolutions_weights(
        canary_image, bf16):
    x_c, y_c, test = canary_image
    s = first_layer.Setting(n_zero=400, bf16=bf16, conv_bias=True, **TINY)
    x, y, c = first_layer.worlds(s, x_c, y_c, "add")[0]
    rec = first_layer.trial(s, x, y, c, seed=3, test=test)
    assert rec["empty_batches"] < 60 and rec["others_moved"] > 0  # batches of zero records did train the model
    assert rec["first_conv_changed"] == 0 and rec["first_conv_max_change"] == 0.0  # the weights: bit for bit
    assert rec["first_conv_bias_max_change"] is not None  # measured apart; the bias may move without data
    assert rec["running_mean_abs_max"] > 0  # the running mean takes the bias's value: not a valid statistic here
    plain = first_layer.trial(first_layer.Setting(n_zero=400, bf16=bf16, **TINY), x, y, c, seed=3, test=test)
    assert plain["first_conv_bias_max_change"] is None


def test_a_biased_setting_moves_the_weights_once_the_canary_is_sampled_and_has_the_weights_statistic_only(
        canary_image, tmp_path, mirror_root):
    s = first_layer.Setting(n_zero=1, width=0.0625, steps=240, conv_bias=True)
    recs = first_layer.run_trials(s, trials=3, records=tmp_path / "trials.jsonl", data_root=mirror_root,
                                  progress=False)
    assert len(recs) == 12 and all(r["setting"] == s.key() for r in recs)
    assert all(r["first_conv_changed"] == 0 for r in recs if r["world"] == 0)
    world1 = [r for r in recs if r["world"] == 1]
    assert all((r["first_conv_changed"] > 0) == (r["canary_sampled"] > 0) for r in world1)
    assert sum(r["canary_sampled"] > 0 for r in world1) > 0
    out = first_layer.rows(s, recs)
    assert [(r["adjacency"], r["statistic"]) for r in out] == [("add", "first_conv"), ("replace", "first_conv")]
    for row in out:
        assert row["conv_bias"] is True and (row["model"], row["norm"], row["width"]) == ("inception", "batch", 0.0625)
        assert "ignores the convolution's bias" in row["statistic_is"] and row["false_positives"] == 0
        assert row["world0_first_conv_bias_max_change_max"] is not None
    plain = first_layer.rows(first_layer.Setting(n_zero=1, width=0.0625, steps=240), recs)
    assert [r["statistic"] for r in plain] == ["first_conv", "running_mean", "either"] * 2
    assert all(r["conv_bias"] is False and r["model"] == "inception" for r in plain)


def test_update_llr_is_the_log_ratio_of_the_two_gaussian_mixtures():
    g = torch.Generator().manual_seed(0)
    z, shift = torch.randn(50, 10, generator=g, dtype=torch.float64), torch.randn(50, 10, generator=g, dtype=torch.float64)
    for q in (0.3, 1.0):
        mix = (1 - q) * torch.exp(-0.5 * (z * z).sum(1)) + q * torch.exp(-0.5 * ((z - shift) ** 2).sum(1))
        want = torch.log(mix) + 0.5 * (z * z).sum(1)
        assert torch.allclose(canary._update_llr(z, shift, q), want, rtol=1e-10)


def test_the_gaussian_mechanisms_exact_epsilon_meets_delta_and_sits_below_the_rdp_claim():
    sigma, delta = 4.0625, 1e-5
    eps, how = control.gaussian_exact_epsilon(sigma, q=1.0, steps=1, delta=delta)
    mu = 1 / sigma
    assert stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2) == pytest.approx(delta)
    assert 0.85 < eps < 0.9954 and "exact" in how  # Opacus' RDP gives 0.9954 for this sigma
    prv, how = control.gaussian_exact_epsilon(1.5234, q=0.05, steps=20, delta=delta)
    assert 0 < prv < 0.9967 and "PRV" in how


def test_the_dpsgd_control_has_power_and_stays_under_dpsgds_own_epsilon(mirror_root):
    problem = canary.canary_problem(load("mnist", "train", root=mirror_root), n=10)
    row = control.dpsgd_control(problem, q=1.0, steps=1, eps=1.0, trials=6000)
    assert 0 < row["eps_lower_bound"] <= row["mechanism_eps"] <= row["claimed_eps"]
    assert row["held_out_per_world"] == 3000 and row["adversary_sees"] == "every update"


def test_the_vectorised_threshold_search_picks_the_threshold_one_call_per_candidate_picks():
    def loop(neg, pos, delta):
        neg_a, pos_a = neg[: len(neg) // 2], pos[: len(pos) // 2]
        values = torch.unique(torch.cat([neg_a, pos_a]))
        candidates = torch.cat([values[:1] - 1, (values[1:] + values[:-1]) / 2, values[-1:] + 1])
        best, best_t = -1.0, None
        for t in candidates.tolist():
            lb = epsilon_lower_bound(false_positives=int((neg_a > t).sum()), n_negatives=len(neg_a),
                                     false_negatives=int((pos_a <= t).sum()), n_positives=len(pos_a),
                                     delta=delta).epsilon
            if lb > best:
                best, best_t = lb, t
        return best_t

    g = torch.Generator().manual_seed(1)
    for case in range(30):
        n = int(torch.randint(2, 200, (1,), generator=g))
        neg = torch.randn(n, generator=g, dtype=torch.float64)
        pos = torch.randn(n + case % 4, generator=g, dtype=torch.float64) + 3 * float(torch.rand(1, generator=g))
        if case % 3 == 0:
            neg, pos = neg.round(), pos.round()  # ties
        if case % 5 == 0:
            neg = torch.zeros(n, dtype=torch.float64)  # a world whose statistic is identically 0
        assert audit_threshold(neg, pos, delta=1e-5)[1] == loop(neg, pos, 1e-5)


def test_the_record_of_d_prime_is_no_8_bit_image_and_an_8_bit_uniform_record_could_move_the_first_convolution():
    """What docs/audit.md says of D': it is zero after normalisation, the data set's mean, which is not an integer
    pixel value; and a uniform 8-bit image (black, or the nearest grey to the mean) is not zero at the input, and the
    first convolution's patches of it span every kernel, so the exact argument does not carry over to it."""
    from dirdp.data import get_spec
    from dirdp.models import build_model

    spec = get_spec("mnist")
    assert spec.mean[0] * 255 != round(spec.mean[0] * 255)  # 33.33...: no 8-bit file holds the zero record
    conv = next(m for m in build_model("inception", num_classes=10, in_channels=1).modules()
                if isinstance(m, torch.nn.Conv2d))
    for value in (0, 33, 34, 255):
        x = torch.full((1, 1, 28, 28), (value / 255 - spec.mean[0]) / spec.std[0])
        assert x.abs().min() > 0
        patches = torch.nn.functional.unfold(x, conv.kernel_size, padding=conv.padding, stride=conv.stride)[0].T
        assert torch.linalg.matrix_rank(patches.double()) == conv.weight[0].numel()  # every kernel direction
