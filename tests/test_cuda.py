"""The GPU campaign's test lane (``pytest -m cuda``): Algorithm 1 on a CUDA device.

- the mechanism stays finite under bf16 autocast, at r* and at both ends of (0, alpha), and at
  extreme logits;
- a CUDA run killed and resumed ends where an uninterrupted one does (its generator states
  round-trip), while a resume that lost them, or another seed, ends elsewhere;
- channels_last computes the same loss and gradients as the contiguous layout;
- ``train`` runs with bf16 and channels_last, and its provenance names the GPU.

Skipped where torch sees no CUDA device. Each test takes a few seconds on a GPU.
"""

import copy
import functools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from dirdp import accountant
from dirdp.mechanism import dirichlet_nll
from dirdp.models import build_model
from dirdp.presets import PRESETS
from dirdp.training import make_config, train

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")]

REPO = Path(__file__).resolve().parents[1]
ALPHA = 3.0


@functools.cache
def rstar_mnist_eps1() -> float:
    """r* at eps = 1 for the paper's MNIST protocol (about 0.277)."""
    p = PRESETS["mnist"]
    return accountant.rstar(eps=1.0, alpha=p.alpha, q=p.q, steps=p.steps, delta=p.delta)


def r_values():
    return [rstar_mnist_eps1(), 0.01, 2.9]


@pytest.fixture(scope="module")
def inception():
    """The paper's MNIST model at full width, on the GPU, in training mode."""
    torch.manual_seed(0)
    return build_model("inception", num_classes=10, in_channels=1, width=1.0).cuda().train()


def batch(n=250, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(n, 1, 28, 28, device="cuda", generator=g)
    y = torch.randint(0, 10, (n,), device="cuda", generator=g)
    return x, y


# ------------------------------------------------------------------------- (a) bf16 autocast


@pytest.mark.parametrize("which", ["rstar", "r=0.01", "r=2.9"])
def test_mechanism_under_bf16_autocast_is_finite_with_nonzero_gradients(inception, which):
    r = dict(zip(["rstar", "r=0.01", "r=2.9"], r_values()))[which]
    x, y = batch()
    inception.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = inception(x)
    assert logits.dtype == torch.bfloat16  # autocast is on for the model, as in training with --bf16
    loss = dirichlet_nll(logits, y, r=r, alpha=ALPHA, generator=torch.Generator(device="cuda").manual_seed(1))
    assert loss.dtype == torch.float32 and torch.isfinite(loss).item()
    loss.backward()
    for name, p in inception.named_parameters():
        assert p.grad is not None, name
        assert torch.isfinite(p.grad).all().item(), f"{name}: non-finite gradient at r={r}"
        assert (p.grad != 0).any().item(), f"{name}: all-zero gradient at r={r}"


def test_extreme_bf16_logits_stay_finite(inception):
    g = torch.Generator(device="cuda").manual_seed(2)
    y = torch.randint(0, 10, (250,), device="cuda", generator=g)
    x, _ = batch(seed=3)
    for r in r_values():
        # logits of scale 1e3 given directly, in bf16, with the mechanism called inside the autocast region
        z = (torch.randn(250, 10, device="cuda", generator=g) * 1e3).to(torch.bfloat16).requires_grad_(True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = dirichlet_nll(z, y, r=r, alpha=ALPHA, generator=g, reduction="none")
        assert loss.dtype == torch.float32 and torch.isfinite(loss).all().item() and (loss >= 0).all().item()
        loss.mean().backward()
        assert z.grad.dtype == torch.bfloat16 and torch.isfinite(z.grad).all().item()
        # and through the model: its bf16 logits scaled by 1e3
        inception.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = inception(x) * 1e3
        assert logits.dtype == torch.bfloat16
        loss = dirichlet_nll(logits, y, r=r, alpha=ALPHA, generator=g)
        assert torch.isfinite(loss).item()
        loss.backward()
        for name, p in inception.named_parameters():
            assert torch.isfinite(p.grad).all().item(), f"{name}: non-finite gradient at r={r}, logits x1e3"


# ------------------------------------------------------------------------- (b) kill and resume on CUDA

# ``python -m dirdp`` with deterministic kernels where torch has them (warn_only: the others still run),
# so that the whole and the resumed run differ by at most a GPU kernel's nondeterminism
CLI = """
import runpy, sys
import torch
torch.use_deterministic_algorithms(True, warn_only=True)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
sys.argv = ["python -m dirdp", *sys.argv[1:]]
runpy.run_module("dirdp", run_name="__main__", alter_sys=True)
"""


def float_state(path: Path) -> dict[str, torch.Tensor]:
    sd = torch.load(path, map_location="cpu", weights_only=True)
    return {k: v.double() for k, v in sd.items() if v.is_floating_point()}


def max_abs_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max((a[k] - b[k]).abs().max().item() for k in a)


def all_close(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-5, rtol=1e-4) for k in a)


def test_killed_and_resumed_cuda_run_ends_with_the_same_parameters(tiny_root, tmp_path, kill_at_first_checkpoint):
    env = dict(os.environ, DIRDP_DATA=str(tiny_root), OMP_NUM_THREADS="1", CUBLAS_WORKSPACE_CONFIG=":4096:8")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    args = ["train", "--dataset", "mnist", "--eps", "8", "--steps", "400", "--q", "0.25", "--width", "0.0625",
            "--eval-every", "100", "--checkpoint-every", "20", "--device", "cuda", "--no-progress"]

    procs = []

    def start(out: Path, *extra: str, log: Path | None = None) -> subprocess.Popen:
        cmd = [sys.executable, "-c", CLI, *args, *extra, "--out", str(out)]
        if log is None:
            procs.append(subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
        else:
            with open(log, "w") as fh:  # the child keeps its own copy of the descriptor
                procs.append(subprocess.Popen(cmd, cwd=REPO, env=env, stdout=fh, stderr=subprocess.STDOUT))
        return procs[-1]

    def finish(proc: subprocess.Popen) -> str:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"exit {proc.returncode}\n{stdout}\n{stderr}"
        return stderr

    try:
        whole, other, cut = tmp_path / "whole.json", tmp_path / "other.json", tmp_path / "cut.json"
        p_whole, p_other = start(whole), start(other, "--seed", "1")
        cut_log = tmp_path / "cut.log"
        p_cut = start(cut, log=cut_log)
        ckpt = tmp_path / "cut.json.ckpt.pt"
        kill_at_first_checkpoint(p_cut, ckpt)
        assert ckpt.exists() and not cut.exists(), f"the run ended before it was killed:\n{cut_log.read_text()}"
        saved = torch.load(ckpt, weights_only=False)  # no map_location: each tensor on the device it was saved from
        assert 0 < saved["state"]["step"] < 400
        assert next(iter(saved["model"].values())).device.type == "cuda"
        # generator states are CPU byte tensors, also the CUDA generator's (the resume restores them with set_state)
        for key in ("g_size", "g_dev"):
            assert saved[key].dtype == torch.uint8 and saved[key].device.type == "cpu"
        # the same checkpoint with fresh generators: a resume that lost its generator states
        lost = tmp_path / "lost.json"
        torch.save(dict(saved, g_size=torch.Generator().manual_seed(12_345).get_state(),
                        g_dev=torch.Generator(device="cuda").manual_seed(12_345).get_state()),
                   tmp_path / "lost.json.ckpt.pt")

        p_resume, p_lost = start(cut), start(lost)
        resumed_log = finish(p_resume)
        assert f"resumed from step {saved['state']['step']}" in resumed_log
        assert "resumed from step" in finish(p_lost)
        finish(p_whole)
        finish(p_other)

        a, b = json.loads(whole.read_text()), json.loads(cut.read_text())
        assert a["provenance"]["device"] == torch.cuda.get_device_name(0)
        assert [s for s, _ in a["loss_curve"]] == [s for s, _ in b["loss_curve"]]
        assert all(abs(x - y) <= 1e-4 for (_, x), (_, y) in zip(a["loss_curve"], b["loss_curve"]))
        assert [s for s, _ in a["accuracy_curve"]] == [s for s, _ in b["accuracy_curve"]] == [100, 200, 300, 400]

        w = {name: float_state(tmp_path / f"{name}.model.pt") for name in ("whole", "cut", "other", "lost")}
        assert all_close(w["whole"], w["cut"]), f"max |diff| {max_abs_diff(w['whole'], w['cut']):.3g}"
        d_resume = max_abs_diff(w["whole"], w["cut"])
        for name in ("other", "lost"):  # the tolerance above tells these apart from the whole run
            d = max_abs_diff(w["whole"], w[name])
            assert not all_close(w["whole"], w[name]) and d > 1e-3 and d > 100 * d_resume, (name, d, d_resume)
    finally:  # no run outlives a failed assertion
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# ------------------------------------------------------------------------- (c) channels_last


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    """||a - b|| / ||b||."""
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b).clamp_min(1e-30)).item()


def test_channels_last_gives_the_same_loss_and_gradients():
    # BatchNorm in training mode makes this model's gradients ill-conditioned: float32 rounding alone moves
    # some of them by ~1e-2 at full width (measured on CPU against float64). So each gradient of the
    # channels_last model is compared with the contiguous one within 5 % + 10x float32's own error on it
    # (the contiguous float32 gradient against a float64 copy of the model); a layout bug moves them by ~100 %.
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = False  # on by default for convolutions: true float32 here
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        torch.manual_seed(0)
        base = build_model("inception", num_classes=10, in_channels=1, width=1.0).cuda().train()
        nets = {"contiguous": base, "channels_last": copy.deepcopy(base).to(memory_format=torch.channels_last),
                "float64": copy.deepcopy(base).double()}
        x, y = batch(seed=4)
        inputs = {"contiguous": x, "channels_last": x.contiguous(memory_format=torch.channels_last),
                  "float64": x.double()}
        r = rstar_mnist_eps1()
        losses = {
            # the mechanism casts the logits to float32 itself (also the float64 model's)
            "alg1": lambda z: dirichlet_nll(z, y, r=r, alpha=ALPHA,
                                            generator=torch.Generator(device="cuda").manual_seed(5)),
            "cross-entropy": lambda z: F.cross_entropy(z, y),
        }
        for loss_name, loss_fn in losses.items():
            got = {}
            for layout, net in nets.items():
                net.zero_grad(set_to_none=True)
                loss = loss_fn(net(inputs[layout]))
                loss.backward()
                got[layout] = loss.item(), {n: p.grad.detach().double().clone() for n, p in net.named_parameters()}
            (l_ref, g_ref), (l_cl, g_cl), (_, g_64) = got["contiguous"], got["channels_last"], got["float64"]
            assert math.isfinite(l_ref) and l_cl == pytest.approx(l_ref, rel=1e-4), loss_name
            assert g_ref.keys() == g_cl.keys() == g_64.keys()
            for n in g_ref:
                assert torch.isfinite(g_cl[n]).all().item(), f"{loss_name} {n}"
                err, fp32 = rel_err(g_cl[n], g_ref[n]), rel_err(g_ref[n], g_64[n])
                assert err <= 0.05 + 10 * fp32, f"{loss_name} {n}: channels_last off by {err:.3g}, fp32 by {fp32:.3g}"

            def flat(g):
                return torch.cat([v.flatten() for v in g.values()])

            err, fp32 = rel_err(flat(g_cl), flat(g_ref)), rel_err(flat(g_ref), flat(g_64))
            assert err <= 0.02 + 10 * fp32, f"{loss_name}: channels_last off by {err:.3g}, float32 by {fp32:.3g}"
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32


# ------------------------------------------------------------------------- (d) train() with bf16 and channels_last


@pytest.mark.parametrize("eps", [1.0, math.inf])
def test_train_on_cuda_with_bf16_and_channels_last(tiny_root, tmp_path, eps):
    cfg = make_config("mnist", eps, 0, steps=6, q=0.25, width=0.0625, eval_every=3, device="cuda", bf16=True,
                      channels_last=True)
    out = tmp_path / "run.json"
    res = train(cfg, out, data_root=tiny_root, progress=False)
    assert res["provenance"]["device"] == torch.cuda.get_device_name(0)
    assert res["provenance"]["config"]["device"] == "cuda" and res["provenance"]["config"]["bf16"] is True
    assert res["loss_curve"] and all(isinstance(v, float) and math.isfinite(v) for _, v in res["loss_curve"])
    assert [s for s, _ in res["accuracy_curve"]] == [3, 6]
    assert (res["rstar"] is None) == (eps == math.inf)
    if res["rstar"] is not None:
        assert res["epsilon"] <= 1.0
    assert out.exists() and (tmp_path / "run.model.pt").exists()
    weights = torch.load(tmp_path / "run.model.pt", map_location="cpu", weights_only=True)
    assert all(torch.isfinite(t).all().item() for t in weights.values() if t.is_floating_point())
