"""The subspace canary test (workflow.audit.subspace) on a tiny model: Algorithm 1's update has no component
outside the span of D's Jacobians (world 0 at round-off), the canary's has (world 1, orders of magnitude
above), for both adjacencies; DP-SGD's Gaussian noise fills the complement in both worlds alike; the
held-out epsilon lower bound beats Algorithm 1's claimed epsilon at q = 1 and does not beat DP-SGD's."""

import math

import pytest
import torch

from dirdp import accountant
from dirdp.audit import canary
from dirdp.presets import PRESETS
from workflow.audit import subspace, subspace_rows, subspace_setup

from conftest import pinned_torch_threads

TINY = ("papernot_cnn", 0.25)  # 1902 parameters; D of 10 records spans at most 100 directions
N_RECORDS = 10
TRIALS = 64  # 32 held out per world: a perfect test certifies ln(1 / 0.109) = 2.2 > the claimed 2.03


one_thread = pinned_torch_threads(1, "module")  # tiny tensors: threads only add overhead


@pytest.fixture(scope="module")
def problem(mirror_root):
    return subspace_setup.load_problem(N_RECORDS, seed=0, root=mirror_root)


@pytest.fixture(scope="module")
def one_step(problem):
    """q = 1, T = 1: both methods, both adjacencies, TRIALS trials per world."""
    return subspace.subspace_residuals(*TINY, trials=TRIALS, problem=problem, seed=0)


@pytest.fixture(scope="module")
def rows(one_step):
    return {(r["method"], r["adjacency"]): r for r in subspace_rows.audit_rows(one_step)}


def test_the_claim_at_q1_is_lemma9_at_the_papers_rstar():
    p = PRESETS["mnist"]
    r = accountant.rstar(eps=1.0, alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta)
    c = subspace_setup.claim("alg1", q=1.0, steps=1)
    orders = accountant.admissible_orders(r=r, alpha=p.alpha)
    direct = accountant.rdp_to_dp(orders=orders, rdp=accountant.dirichlet_rdp(orders=orders, r=r, alpha=p.alpha),
                                  delta=p.delta).min()
    assert c.r == r and c.eps == pytest.approx(direct) and 1.5 < c.eps < 2.5
    sub = subspace_setup.claim("alg1", q=p.q, steps=50)  # q < 1: Theorem 10 at the same r*
    assert sub.eps == accountant.epsilon(r=r, alpha=p.alpha, q=p.q, steps=50, delta=p.delta).epsilon


def test_group_norm_is_opacus_conversion():
    from dirdp.baselines.dpsgd import make_compatible
    from dirdp.models import build_model

    ours = subspace_setup.audit_model("inception", 0.25, seed=0)
    theirs = make_compatible(build_model("inception", num_classes=10, in_channels=1, width=0.25))
    assert repr(ours) == repr(theirs)
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in ours.modules())


def test_jacobian_rows_are_the_per_record_logit_gradients(problem):
    model = subspace_setup.audit_model(*TINY, seed=1, dtype=torch.float64)
    x = problem.x[:2].double()
    rows = subspace.jacobian_rows(model, x, chunk_size=1)
    assert rows.shape == (20, sum(p.numel() for p in model.parameters()))
    for i, k in ((0, 3), (1, 9)):
        g = torch.autograd.grad(model(x[i:i + 1])[0, k], list(model.parameters()))
        assert torch.allclose(rows[10 * i + k], subspace.flat(g), rtol=1e-10, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("adjacency", ["add", "replace"])
def test_alg1_world0_is_round_off_and_world1_is_far_above(one_step, adjacency):
    v = one_step[("alg1", adjacency)]
    assert float(v["rel0"].max()) < 1e-10  # float64 round-off, relative to the update's norm
    assert float(v["world0"].max()) < 1e-12
    assert float(v["world1"].min()) > 1e6 * float(v["world0"].max())  # every trial, six orders and more
    assert float(v["rel1"].min()) > 1e-3
    assert bool(v["sampled1"].all())  # q = 1: the canary is always in


@pytest.mark.parametrize("adjacency", ["add", "replace"])
def test_dpsgd_noise_fills_the_complement_in_both_worlds(one_step, adjacency):
    v = one_step[("dpsgd", adjacency)]
    m0, m1 = float(v["world0"].median()), float(v["world1"].median())
    assert 0.8 < m1 / m0 < 1.25  # same order: the canary's clipped gradient drowns in the noise
    assert float(v["world1"].min()) < float(v["world0"].max())  # the two worlds overlap
    assert float(v["rel0"].min()) > 0.5  # most of the update lies outside the span


@pytest.mark.parametrize("adjacency", ["add", "replace"])
def test_the_bound_beats_alg1s_claim_and_not_dpsgds(rows, adjacency):
    alg1, dpsgd = rows[("alg1", adjacency)], rows[("dpsgd", adjacency)]
    assert alg1["fpr"] == 0 and alg1["fnr"] == 0 and alg1["eps_lower_bound"] == pytest.approx(alg1["ceiling"])
    assert alg1["eps_lower_bound"] > alg1["claimed_eps"]  # Lemma 9's one-step guarantee is violated
    assert dpsgd["claimed_eps"] == alg1["claimed_eps"] and dpsgd["certified_eps"] <= dpsgd["claimed_eps"]
    assert dpsgd["eps_lower_bound"] <= dpsgd["claimed_eps"]
    assert alg1["held_out_per_world"] == TRIALS // 2 and math.isinf(alg1["exact_bound"])
    assert math.isnan(dpsgd["exact_bound"])  # DP-SGD's world 0 is noise, never exactly 0: no exact bound


def test_replace_one_needs_the_replaced_records_rows(problem):
    """Projecting out only the shared records leaves world 0's replaced record visible: that is why the
    statistic's span includes the replaced record's rows."""
    model = subspace_setup.audit_model(*TINY, seed=2, dtype=torch.float64)
    c = subspace_setup.claim("alg1", q=1.0, steps=1)
    x, y = problem.x.double(), problem.y
    full = subspace.span_basis(subspace.jacobian_rows(model, x))
    shared = subspace.span_basis(subspace.jacobian_rows(model, x[: problem.replaced]))
    u = subspace.sgd_update(model, x, y, c, expected_batch=len(y), generator=torch.Generator().manual_seed(0))
    assert subspace.residual_norm(full, u) < 1e-10 * float(u.norm())
    assert subspace.residual_norm(shared, u) > 1e-3 * float(u.norm())


def test_several_steps_at_q_below_one_detect_exactly_the_runs_that_sample_the_canary(problem):
    res = subspace.subspace_residuals(*TINY, methods=("alg1",), adjacencies=("add",), q=0.2, steps=3, trials=8,
                                      problem=problem, seed=3)
    v = res[("alg1", "add")]
    assert float(v["world0"].max()) < 1e-12  # S_t recomputed at each step's parameters
    assert torch.equal(v["world1"] > 1e-8, v["sampled1"])
    assert 0 < int(v["sampled1"].sum()) < 8  # (this seed) both cases occur: the test sees each
    row, final = subspace_rows.audit_rows(res)
    assert (row["adversary_sees"], final["adversary_sees"]) == ("every update", "final model")
    assert (row["model"], row["width"], row["norm"]) == ("papernot_cnn", 0.25, "none")  # typed: no label to split
    assert math.isnan(final["exact_bound"])  # theta_T moves in world 0 too: the never-sampled event proves nothing
    assert row["T"] == 3 and row["exact_bound"] == pytest.approx(canary.never_sampled_bound(q=0.2, steps=3,
                                                                                           delta=1e-5))
    r = res["claims"]["alg1"].r
    assert row["claimed_eps"] == accountant.epsilon(r=r, alpha=3.0, q=0.2, steps=3, delta=1e-5).epsilon


def test_a_row_whose_trials_cannot_reach_the_claim_says_so():
    from workflow.audit.claims import verdict
    assert verdict(1.84, 0.93, 1.84) == "claim violated"
    assert verdict(0.0, 0.92, 0.81) == "too few trials to test the claim"   # a perfect separation certifies 0.81
    assert verdict(0.92, 0.92, 0.92) == "too few trials to test the claim"
    assert verdict(0.0, 2.03, 3.28) == "no violation found"


# --- issue 34: claims matched to each adjacency, the final-model statistic ---------------------------------------

def test_the_matched_claims_are_the_hand_computed_ones():
    """At the paper's q and T = 1,000 the add/remove claim is Theorem 10's 0.926551195452308 (recomputed in 50-digit
    arithmetic by an independent review) and replace-one is its group-privacy conversion (2 eps, (1 + e^eps) delta) =
    (1.853102..., 3.5257832e-5); at q = 1 replace-one is Lemma 9's claim and add/remove has none."""
    from workflow.audit.claims import matched_claim

    p = PRESETS["mnist"]
    c = subspace_setup.claim("alg1", q=p.q, steps=1000)
    assert c.eps == pytest.approx(0.926551195452308, rel=1e-12)
    add = matched_claim("alg1", "add", q=c.q, eps=c.eps, certified=c.certified, delta=c.delta)
    rep = matched_claim("alg1", "replace", q=c.q, eps=c.eps, certified=c.certified, delta=c.delta)
    assert (add.eps, add.delta) == (c.eps, 1e-5)
    assert rep.eps == pytest.approx(1.853102390904616, rel=1e-12)
    assert rep.delta == pytest.approx(3.5257832e-5, rel=1e-7)  # 1e-5 (1 + e^0.926551195452308)
    one = subspace_setup.claim("alg1", q=1.0, steps=1)
    assert matched_claim("alg1", "replace", q=1.0, eps=one.eps, certified=one.eps, delta=1e-5).eps == one.eps
    none = matched_claim("alg1", "add", q=1.0, eps=one.eps, certified=one.eps, delta=1e-5)
    assert math.isinf(none.eps) and not none.finite and "reveals membership" in none.by
    dp = matched_claim("dpsgd", "replace", q=1.0, eps=one.eps, certified=2.0, delta=1e-5)
    assert dp.eps == 4.0 and dp.delta == pytest.approx(1e-5 * (1 + math.exp(2.0)))
    with pytest.raises(ValueError, match="adjacency must be one of"):
        matched_claim("alg1", "swap", q=0.5, eps=1.0, certified=1.0, delta=1e-5)


def test_a_row_faces_its_own_adjacencys_claim(rows):
    """One step at q = 1: the add/remove row has no finite claim to violate, the replace-one row faces Lemma 9."""
    add, rep = rows[("alg1", "add")], rows[("alg1", "replace")]
    assert math.isinf(add["matched_claim_eps"]) and add["verdict"] == "no finite claim"
    assert rep["matched_claim_eps"] == rep["claimed_eps"] and rep["verdict"] == "claim violated"
    assert add["adversary_sees"] == rep["adversary_sees"] == "final model"  # T = 1: the one update is the model
    assert rows[("dpsgd", "add")]["verdict"] == "no violation found"
    assert rows[("dpsgd", "replace")]["matched_claim_eps"] == pytest.approx(2 * rows[("dpsgd", "add")]["certified_eps"])


@pytest.mark.slow
def test_the_final_model_statistic_on_a_tiny_model(problem):
    """theta_T - theta_0 outside S_0 + S_T: world 0's residual is not round-off once the parameters move (the
    Jacobians drift) but stays far below world 1's, where the canary was sampled; a run that never moved is 0;
    DP-SGD gets the final-model statistic only when asked, and its every-update statistic is then NaN."""
    res = subspace.subspace_residuals(*TINY, methods=("alg1", "dpsgd"), adjacencies=("add",), q=0.2, steps=3,
                                      trials=8, problem=problem, seed=3, every_update=("alg1",))
    v, d = res[("alg1", "add")], res[("dpsgd", "add")]
    assert float(v["world0"].max()) < 1e-12  # every update: exact
    assert 0 < float(v["final0"].max()) < 1e-3  # final model: drift, small
    hit = v["sampled1"]
    assert float(v["final1"][hit].median()) > 10 * float(v["final0"].median())
    assert bool(torch.isnan(d["world0"]).all()) and bool((d["final0"] > 0.1).all())  # noise everywhere
    sees = {(r["method"], r["adversary_sees"]) for r in subspace_rows.audit_rows(res)}
    assert sees == {("alg1", "every update"), ("alg1", "final model"), ("dpsgd", "final model")}
    never = subspace.subspace_residuals(*TINY, methods=("alg1",), adjacencies=("add",), q=1e-9, steps=2, trials=2,
                                        problem=problem, seed=0)[("alg1", "add")]
    assert float(never["final0"].abs().max()) == 0.0 and float(never["final1"].abs().max()) == 0.0


@pytest.mark.slow
def test_the_trials_split_over_processes_give_the_same_statistics(problem):
    kw = dict(methods=("alg1",), adjacencies=("add",), q=0.2, steps=2, trials=4, problem=problem, seed=5)
    one, two = subspace.subspace_residuals(*TINY, **kw), subspace.subspace_residuals(*TINY, workers=2, **kw)
    for name, value in one[("alg1", "add")].items():
        if name != "step_time_s":
            assert torch.equal(value, two[("alg1", "add")][name]), name
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        subspace.subspace_residuals(*TINY, workers=0, **kw)


def test_the_audited_models_normalisation_is_read_from_the_model_itself():
    assert subspace_setup.model_fields("inception", 0.25) == dict(model="inception", width=0.25, norm="group")
    assert subspace_setup.model_fields("papernot_cnn", 1) == dict(model="papernot_cnn", width=1.0, norm="none")
