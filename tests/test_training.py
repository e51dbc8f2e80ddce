"""Algorithm 1's training loop: Poisson sampling, models, determinism, kill/resume, r* for what runs."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from dirdp import accountant, models
from dirdp.data import load
from dirdp.presets import PRESETS
from dirdp.sampling import poisson_sample
from dirdp.training import make_config, train


def test_poisson_sample_is_definition_5():
    # each index independently in with probability q: marginals, pairwise independence, Binomial size
    n, q, draws = 40, 0.15, 20_000
    gs, gi = torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)
    m = np.zeros((draws, n), dtype=bool)
    for t in range(draws):
        m[t, poisson_sample(n, q, size_generator=gs, index_generator=gi, device="cpu").numpy()] = True
    se = math.sqrt(q * (1 - q) / draws)
    assert np.abs(m.mean(0) - q).max() < 4.5 * se
    both = (m[:, :, None] & m[:, None, :]).mean(0)[np.triu_indices(n, 1)]
    assert np.abs(both - q * q).max() < 4.5 * math.sqrt(q * q * (1 - q * q) / draws)
    sizes = m.sum(1)
    assert sizes.mean() == pytest.approx(n * q, abs=4 * math.sqrt(n * q * (1 - q) / draws))
    assert sizes.var() == pytest.approx(n * q * (1 - q), rel=0.05)
    assert (sizes == 0).mean() == pytest.approx((1 - q) ** n, abs=0.005)  # empty batches happen


def test_paper_models_have_their_published_sizes_and_no_inplace_ops():
    sizes = {name: sum(p.numel() for p in models.build_model(name, num_classes=10, in_channels=3).parameters())
             for name in ("resnet18", "resnet9")}
    assert sizes["resnet18"] == 11_173_962  # the standard CIFAR ResNet-18
    inception = models.build_model("inception", num_classes=10, in_channels=1)
    assert 1.6e6 < sum(p.numel() for p in inception.parameters()) < 1.7e6
    for name in models.MODELS:
        m = models.build_model(name, num_classes=7, in_channels=3, width=0.25)
        x = torch.randn(4, 3, 28, 28)
        assert m(x).shape == (4, 7)
        assert not any(getattr(mod, "inplace", False) for mod in m.modules())
    with pytest.raises(KeyError, match="Known"):
        models.build_model("vgg", num_classes=10, in_channels=3)


@pytest.fixture(scope="module")
def tiny_mnist(tiny_root):
    return {s: load("mnist", s, root=tiny_root, download=False) for s in ("train", "test")}


def small(eps=1.0, seed=0, **kw):
    base = dict(steps=12, q=0.25, width=0.0625, eval_every=6, log_every=4, checkpoint_every=5)
    return make_config("mnist", eps, seed, **{**base, **kw})


def test_same_seed_same_result_and_other_seed_differs(tiny_mnist, tmp_path):
    a = train(small(), tmp_path / "a.json", data=tiny_mnist, progress=False)
    b = train(small(), tmp_path / "b.json", data=tiny_mnist, progress=False)
    c = train(small(seed=1), tmp_path / "c.json", data=tiny_mnist, progress=False)
    assert a["params_sha256"] == b["params_sha256"] and a["loss_curve"] == b["loss_curve"]
    assert a["params_sha256"] != c["params_sha256"]
    assert not (tmp_path / "a.json.ckpt.pt").exists()  # removed once the result is written


def test_rstar_is_recomputed_for_the_protocol_that_runs(tiny_mnist, tmp_path):
    res = train(small(eps=2.0), tmp_path / "r.json", data=tiny_mnist, progress=False)
    want = accountant.rstar(eps=2.0, alpha=3.0, q=0.25, steps=12, delta=1e-5)
    assert res["rstar"] == want and res["epsilon"] <= 2.0 and res["epsilon_order"] >= 2
    assert want != accountant.rstar(eps=2.0, alpha=3.0, q=PRESETS["mnist"].q, steps=9600, delta=1e-5)
    rec = json.loads((tmp_path / "r.json").read_text())
    assert rec["provenance"]["config"]["steps"] == 12 and "git_commit" in rec["provenance"]
    assert rec["width_label"].startswith("reduced width")


def test_eps_inf_trains_non_privately_with_the_same_sampling(tiny_mnist, tmp_path):
    res = train(small(eps=math.inf), tmp_path / "inf.json", data=tiny_mnist, progress=False)
    rec = json.loads((tmp_path / "inf.json").read_text())
    assert res["rstar"] is None and rec["epsilon"] == "inf" and rec["eps_target"] == "inf"


def test_a_checkpoint_of_another_run_is_refused(tiny_mnist, tmp_path):
    cfg = small(steps=12)
    torch.save(dict(identity={"other": 1}), tmp_path / "x.json.ckpt.pt")
    with pytest.raises(RuntimeError, match="different run"):
        train(cfg, tmp_path / "x.json", data=tiny_mnist, progress=False)


def test_precision_is_recorded_and_a_run_resumes_only_in_its_own(tiny_mnist, tmp_path):
    from dirdp.run_result import model_label, read_run
    from dirdp.training import CheckpointMismatch

    out = tmp_path / "b.json"
    rec = train(small(bf16=True, channels_last=True), out, data=tiny_mnist, progress=False)
    assert (rec["precision"], rec["channels_last"]) == ("bf16", True)
    run = read_run(out)
    assert run["precision"] == "bf16" and model_label(run).endswith(", bf16")
    # a file of the commits before the field: its config decides (fp32 for every run made then)
    old = {k: v for k, v in rec.items() if k not in ("precision", "channels_last")}
    old["provenance"] = dict(rec["provenance"], config=dict(rec["provenance"]["config"], bf16=False))
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert read_run(tmp_path / "old.json")["precision"] == "fp32"
    # a bf16 checkpoint refuses an fp32 resume (and the reverse), naming the precision it has
    assert out.with_name("b.model.pt").exists()
    torch.save(dict(identity=small().identity(), state={"step": 5}), tmp_path / "c.json.ckpt.pt")
    with pytest.raises(CheckpointMismatch, match="checkpoint of a fp32 run.*without --bf16"):
        train(small(bf16=True), tmp_path / "c.json", data=tiny_mnist, progress=False)
    torch.save(dict(identity=small(bf16=True).identity(), state={"step": 5}), tmp_path / "d.json.ckpt.pt")
    with pytest.raises(CheckpointMismatch, match="checkpoint of a bf16 run.*with --bf16"):
        train(small(), tmp_path / "d.json", data=tiny_mnist, progress=False)


@pytest.mark.slow
def test_killed_and_resumed_run_equals_an_uninterrupted_one(tiny_root, tmp_path, kill_at_first_checkpoint):
    env = dict(os.environ, DIRDP_DATA=str(tiny_root), OMP_NUM_THREADS="1")
    args = [sys.executable, "-m", "dirdp", "train", "--dataset", "mnist", "--eps", "8", "--steps", "100",
            "--q", "0.25", "--width", "0.0625", "--eval-every", "50", "--checkpoint-every", "20", "--no-progress"]
    whole = tmp_path / "whole.json"
    subprocess.run(args + ["--out", str(whole)], env=env, check=True, capture_output=True)
    cut = tmp_path / "cut.json"
    proc = subprocess.Popen(args + ["--out", str(cut)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ckpt = tmp_path / "cut.json.ckpt.pt"
    kill_at_first_checkpoint(proc, ckpt, timeout=120)
    assert ckpt.exists() and not cut.exists(), "the run finished before it could be killed"
    step = torch.load(ckpt, weights_only=False)["state"]["step"]
    assert 0 < step < 100
    subprocess.run(args + ["--out", str(cut)], env=env, check=True, capture_output=True)
    a, b = json.loads(whole.read_text()), json.loads(cut.read_text())
    assert a["params_sha256"] == b["params_sha256"]
    assert a["test_accuracy"] == b["test_accuracy"] and a["accuracy_curve"] == b["accuracy_curve"]
    assert a["loss_curve"] == b["loss_curve"]
    # each session of the run is on record: where it began, its code and its torch threads
    assert [(x["start_step"], x["torch_threads"]) for x in b["provenance"]["sessions"]] == [(0, 1), (step, 1)]
    assert [x["start_step"] for x in a["provenance"]["sessions"]] == [0]
    assert b["provenance"]["sessions"][1]["git_commit"] == b["provenance"]["git_commit"]
    assert [x["processor"] for x in b["provenance"]["sessions"]] == [b["provenance"]["device"]] * 2


def test_runs_table_puts_each_run_beside_the_paper_cell(tiny_mnist, tmp_path):
    from workflow.report import runs

    train(small(eps=1.0), tmp_path / "mnist" / "a.json", data=tiny_mnist, progress=False)
    train(small(eps=math.inf), tmp_path / "mnist" / "b.json", data=tiny_mnist, progress=False)
    table = runs.collect(tmp_path).set_index("eps")
    assert table.loc[1.0, "paper_accuracy"] == 99.37 and table.loc[math.inf, "paper_accuracy"] == 99.51
    assert table.loc[1.0, "diff"] == round(table.loc[1.0, "test_accuracy"] - 99.37, 2)
    assert table.loc[1.0, "certified_eps"] <= 1.0 and pd.isna(table.loc[math.inf, "rstar"])
    assert (table["width_label"].str.startswith("reduced width")).all()
    curves = runs.curves(tmp_path)
    assert set(curves["step"]) == {6, 12}


def test_norm_group_trains_a_model_whose_examples_do_not_see_each_other(tiny_mnist, tiny_root, tmp_path):
    """--norm group: every BatchNorm replaced by GroupNorm; one example's output no longer depends on its batch."""
    from dirdp.training import load_trained

    bn = train(small(), tmp_path / "bn.json", data=tiny_mnist, progress=False)
    gn = train(small(norm="group"), tmp_path / "gn.json", data=tiny_mnist, progress=False)
    assert (bn["norm"], gn["norm"]) == ("batch", "group") and bn["params_sha256"] != gn["params_sha256"]
    net, _ = load_trained(tmp_path / "gn.json", data_root=tiny_root)
    assert models.norm_of(net) == "group"
    net.train()  # the mode training uses: a BatchNorm model's outputs would move with the rest of the batch
    x = tiny_mnist["test"].x[:6]
    other = torch.cat([x[:1], torch.rand_like(x[1:])])
    assert torch.allclose(net(x)[0], net(other)[0], atol=1e-6)
    assert small(norm="group").identity() != small().identity()
    assert "norm" not in small().identity()  # at its default the identity is an earlier commit's (checkpoints resume)
    with pytest.raises(ValueError, match="norm must be one of batch, group"):
        small(norm="layer")


def test_norm_of_names_what_normalises_a_model():
    assert models.norm_of(models.build_model("inception", num_classes=10, in_channels=1, width=0.25)) == "batch"
    assert models.norm_of(models.build_model("resnet9", num_classes=7, in_channels=3, width=0.25,
                                             norm="group")) == "group"
    assert models.norm_of(models.build_model("papernot_cnn", num_classes=10, in_channels=1)) == "none"


@pytest.mark.slow
def test_conv_bias_adds_footnote_2_biases_after_the_bias_free_weights(mirror_root, tmp_path):
    """--conv-bias: every convolution gets a bias drawn as the paper's footnote 2 says (uniform on +-1/sqrt(fan_in)),
    after the model is built, so the weights are the bias-free model's of the same seed; the run records it."""
    from dirdp.training import load_trained

    for name, norm in (("inception", "batch"), ("resnet9", "group"), ("papernot_cnn", "batch")):
        torch.manual_seed(7)
        plain = models.build_model(name, num_classes=7, in_channels=3, width=0.25, norm=norm)
        torch.manual_seed(7)
        biased = models.build_model(name, num_classes=7, in_channels=3, width=0.25, norm=norm, conv_bias=True)
        sd0, sd1 = plain.state_dict(), biased.state_dict()
        assert all(torch.equal(v, sd1[k]) for k, v in sd0.items())  # every parameter and buffer, bit for bit
        convs = [m for m in biased.modules() if isinstance(m, torch.nn.Conv2d)]
        assert convs and all(m.bias is not None for m in convs)
        for m in convs:
            bound = 1 / math.sqrt(m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1])
            assert float(m.bias.detach().abs().max()) <= bound
            assert m.out_channels == 1 or len(torch.unique(m.bias.detach())) > 1
        added = [k for k in sd1 if k not in sd0]
        assert all(k.endswith(".bias") for k in added) and (name == "papernot_cnn") == (added == [])
        if added:
            assert float(torch.cat([sd1[k] for k in added]).abs().min()) > 0
    assert "conv_bias" not in small().identity()  # at its default the identity is an earlier commit's (runs resume)
    assert small(conv_bias=True).identity()["conv_bias"] is True

    out = tmp_path / "bias.json"
    env = dict(os.environ, DIRDP_DATA=str(mirror_root), OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, "-m", "dirdp", "train", "--dataset", "mnist", "--eps", "1", "--steps", "4",
                    "--width", "0.0625", "--train-subset", "500", "--conv-bias", "--no-progress", "--out", str(out)],
                   env=env, check=True, capture_output=True)
    assert json.loads(out.read_text())["provenance"]["config"]["conv_bias"] is True
    net, _ = load_trained(out, data_root=mirror_root, with_data=False)
    assert all(m.bias is not None for m in net.modules() if isinstance(m, torch.nn.Conv2d))
