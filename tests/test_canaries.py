"""The one-run audit's canaries and scores (dirdp.canaries) and the runs that carry them (train --canaries)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from dirdp import canaries
from dirdp.data import get_spec, load
from dirdp.models import build_model


def test_canaries_are_the_other_data_sets_8_bit_images_with_random_labels_half_of_them_trained_on(tiny_root):
    c = canaries.make_canaries("mnist", 20, seed=3, data_root=tiny_root)
    again = canaries.make_canaries("mnist", 20, seed=3, data_root=tiny_root)
    assert torch.equal(c.x, again.x) and torch.equal(c.y, again.y) and torch.equal(c.included, again.included)
    assert c.source == "fashionmnist" and len(set(c.index.tolist())) == 20
    # valid 8-bit images: the normalisation is MNIST's, and un-normalised each pixel is an integer in [0, 255]
    mnist = get_spec("mnist")
    pixels = (c.x * mnist.std[0] + mnist.mean[0]) * 255
    assert torch.allclose(pixels, pixels.round(), atol=1e-3) and pixels.min() >= -1e-3 and pixels.max() <= 255 + 1e-3
    # the very bytes of the Fashion-MNIST test images they come from
    source = load("fashionmnist", "test", root=tiny_root)
    fm = get_spec("fashionmnist")
    src_pixels = (source.x[torch.from_numpy(c.index)] * fm.std[0] + fm.mean[0]) * 255
    assert torch.allclose(pixels.round(), src_pixels.round())
    assert set(c.y.tolist()) <= set(range(10)) and c.included.dtype == torch.bool
    other = canaries.make_canaries("mnist", 20, seed=4, data_root=tiny_root)
    assert not torch.equal(other.included, c.included) or not torch.equal(other.y, c.y)
    big = canaries.make_canaries("mnist", 32, seed=0, data_root=tiny_root)  # the whole tiny test split
    assert 8 <= int(big.included.sum()) <= 24  # Binomial(32, 1/2): outside [8, 24] has probability 0.007
    with pytest.raises(ValueError, match="test split has 32 images"):
        canaries.make_canaries("mnist", 33, seed=0, data_root=tiny_root)
    with pytest.raises(ValueError, match="canaries exist for mnist, fashionmnist"):
        canaries.make_canaries("cifar10", 5, seed=0, data_root=tiny_root)


def test_the_scores_point_at_the_canary_a_model_was_trained_on():
    # eight canaries, each a bright square somewhere else, each with a label of its own
    x = torch.full((8, 1, 28, 28), -0.42)
    for i in range(8):
        r, col = divmod(i, 4)
        x[i, 0, 4 + 10 * r:10 + 10 * r, 2 + 6 * col:8 + 6 * col] = 2.8
    c = canaries.Canaries(x=x, y=torch.arange(8), included=torch.zeros(8, dtype=torch.bool), source="test",
                          index=np.arange(8))
    torch.manual_seed(0)
    net0 = build_model("papernot_cnn", num_classes=10, in_channels=1)
    net_t = build_model("papernot_cnn", num_classes=10, in_channels=1)
    net_t.load_state_dict(net0.state_dict())
    opt = torch.optim.SGD(net_t.parameters(), lr=0.05)
    for _ in range(5):  # train on canary 3 alone
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net_t(c.x[3:4]), c.y[3:4]).backward()
        opt.step()
    before = {k: v.clone() for k, v in net_t.state_dict().items()}
    s = canaries.scores(net0, net_t, c)
    assert all(torch.equal(before[k], v) for k, v in net_t.state_dict().items())  # the model is left as it was
    assert s["white_box"].shape == s["black_box"].shape == (8,)
    assert int(np.argmax(s["white_box"])) == 3 and s["white_box"][3] > 0
    assert int(np.argmax(s["black_box"])) == 3
    # the black-box score is the logit margin: z_y - log sum_{c != y} exp z_c
    with torch.no_grad():
        z = net_t.eval()(c.x).double()[0]  # the batch the scores were computed on (float32 sums depend on it)
    y = int(c.y[0])
    assert s["black_box"][0] == pytest.approx(float(z[y] - torch.cat([z[:y], z[y + 1:]]).logsumexp(0)), rel=1e-9)
    # no displacement, no white-box signal
    assert np.allclose(canaries.scores(net0, net0, c)["white_box"], 0.0)


@pytest.mark.slow
def test_a_run_with_canaries_trains_on_those_drawn_in_and_records_every_score(tiny_root, tmp_path,
                                                                             kill_at_first_checkpoint):
    env = dict(os.environ, DIRDP_DATA=str(tiny_root), OMP_NUM_THREADS="1")
    args = [sys.executable, "-m", "dirdp", "train", "--dataset", "mnist", "--eps", "1", "--steps", "60", "--q", "0.25",
            "--width", "0.0625", "--eval-every", "30", "--checkpoint-every", "5", "--canaries", "12",
            "--canary-seed", "5", "--no-progress"]
    out = tmp_path / "c.json"
    proc = subprocess.Popen(args + ["--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_at_first_checkpoint(proc, tmp_path / "c.json.ckpt.pt", timeout=120)
    assert not out.exists(), "the run finished before it could be killed"
    subprocess.run(args + ["--out", str(out)], env=env, check=True, capture_output=True)  # resumed
    rec = json.loads(out.read_text())
    one = rec["one_run"]
    c = canaries.make_canaries("mnist", 12, seed=5, data_root=tiny_root)
    assert one["included"] == c.included.int().tolist() and one["label"] == c.y.tolist()
    assert rec["n_train"] == 64 + sum(one["included"])  # the tiny training split, then the canaries drawn in
    assert rec["provenance"]["config"]["canaries"] == 12 and rec["provenance"]["config"]["canary_seed"] == 5
    assert set(one["scores"]) == {"white_box", "black_box"} and all(len(v) == 12 for v in one["scores"].values())
    # theta_0 rebuilt for the scores is the one the training started from, across the kill and the resume
    assert one["theta0_as_trained"] is True and len(rec["provenance"]["sessions"]) == 2
    assert one["source"] == "fashionmnist test split" and one["canaries_sha256"] == canaries.digest(c)


def test_canaries_are_refused_where_they_cannot_be_drawn(tiny_root):
    from dirdp.training import make_config

    with pytest.raises(ValueError, match="canaries must be 0 for LATENT"):
        make_config("mnist", 1.0, method="latent", canaries=10)
    with pytest.raises(ValueError, match="canaries must be 0 \\(no canaries\\) or more"):
        make_config("mnist", 1.0, canaries=-1)
    assert make_config("mnist", 1.0, canaries=10).identity()["canaries"] == 10
    assert "canaries" not in make_config("mnist", 1.0).identity()  # a run without keeps its identity
