"""Algorithm 1 end to end: Poisson sampling, the Dirichlet mechanism, SGD, evaluation, checkpoints.

One run = one :class:`RunConfig` -> one result JSON with provenance. Rerunning the same command
after a kill resumes from ``<out>.ckpt.pt``; on CPU the resumed run ends with exactly the same
parameters (``params_sha256``) and accuracy as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from dirdp import accountant, provenance
from dirdp.baselines import dpsgd
from dirdp.data import Split, get_spec, load, random_crop_flip
from dirdp.mechanism import dirichlet_nll
from dirdp.models import build_model
from dirdp.presets import get_preset


# training methods of `python -m dirdp train --method`
METHODS = {"alg1": "Algorithm 1 (Dirichlet mechanism at the softmax)",
           "dpsgd": "DP-SGD with Opacus (per-example clipping C, Gaussian noise)",
           "tempered": "DP-SGD with Opacus on the tempered-sigmoid CNN of Papernot et al. (2021)",
           "latent": "LATENT (Chamikara et al.): local DP per record, FC module trained on randomized bit strings"}


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run. ``eps = inf`` trains non-privately (plain cross-entropy)
    with the same Poisson sampling: the paper's eps = inf column."""

    dataset: str
    eps: float
    seed: int
    steps: int
    q: float
    alpha: float
    delta: float
    lr: float
    optimizer: str
    model: str
    method: str = "alg1"  # a key of METHODS
    max_grad_norm: float = 1.0  # DP-SGD's clipping norm C
    latent_alpha: float = 7.0  # LATENT's privacy-budget coefficient
    width: float = 1.0
    train_subset: int | None = None
    augment: bool = False
    device: str = "cpu"
    bf16: bool = False
    channels_last: bool = False
    eval_every: int = 500
    log_every: int = 50
    checkpoint_every: int = 200

    @property
    def private(self) -> bool:
        return math.isfinite(self.eps)

    def identity(self) -> dict:
        """The fields a checkpoint must share with the run that resumes it."""
        d = dataclasses.asdict(self)
        for k in ("device", "eval_every", "log_every", "checkpoint_every"):
            d.pop(k)
        return d


def progress_bar(*, total: int, desc: str, initial: int = 0):
    """A tqdm bar over training steps: live in a terminal, one line every 30 s in a log file (DAG jobs)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="step", dynamic_ncols=True,
                mininterval=0.1 if sys.stderr.isatty() else 30.0)


def make_config(dataset: str, eps: float, seed: int = 0, **overrides) -> RunConfig:
    """The paper's protocol for ``dataset`` (Section 4.1.2), with ``overrides`` (None = keep).
    Adam defaults to lr = 0.001 (Appendix G); CIFAR-10 turns augmentation on."""
    p = get_preset(dataset)
    overrides = {k: v for k, v in overrides.items() if v is not None}
    optimizer = overrides.pop("optimizer", "sgd")
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam'. Found {optimizer!r}.")
    method = overrides.get("method", "alg1")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}. Found {method!r}.")
    if method == "tempered":
        overrides.setdefault("model", "papernot_cnn")
    if method == "latent":  # its own model; its FC module is trained with Adam (dirdp.baselines.latent)
        if not math.isfinite(eps):
            raise ValueError("LATENT randomizes with a finite eps. Found eps=inf.")
        overrides.setdefault("model", "latent")
        optimizer = overrides.pop("optimizer", None) or "adam"
    base = dict(dataset=p.name, eps=float(eps), seed=seed, steps=p.steps, q=p.q, alpha=p.alpha, delta=p.delta,
                lr=0.001 if optimizer == "adam" else p.lr, optimizer=optimizer, model=p.model,
                augment=p.name == "cifar10")
    base.update(overrides)
    return _validated(RunConfig(**base))


def _validated(cfg: RunConfig) -> RunConfig:
    """``cfg`` if every field is in its domain, else a ValueError naming the field, what was found and what
    is allowed (the CLI prints it and exits 2 before any work starts)."""
    from dirdp.models import MODELS

    def need(ok: bool, field: str, allowed: str):
        if not ok:
            raise ValueError(f"{field} must be {allowed}. Found {field}={getattr(cfg, field)!r}.")

    need(0 < cfg.q <= 1, "q", "a sampling rate in (0, 1]")
    need(cfg.steps >= 1, "steps", "at least 1")
    need(cfg.alpha > 0, "alpha", "> 0")
    need(0 < cfg.delta < 1, "delta", "in (0, 1)")
    need(cfg.lr > 0, "lr", "> 0")
    need(0 < cfg.width <= 8, "width", "a channel multiplier in (0, 8]")
    need(cfg.train_subset is None or cfg.train_subset >= 1, "train_subset", "at least 1 record")
    for field in ("eval_every", "log_every", "checkpoint_every"):
        need(getattr(cfg, field) >= 1, field, "at least 1 step")
    need(cfg.max_grad_norm > 0, "max_grad_norm", "> 0")
    need(cfg.model in MODELS or cfg.model == "latent", "model", f"one of {', '.join(MODELS)}")
    try:
        device = torch.device(cfg.device)
    except (RuntimeError, ValueError):
        device = None
    need(device is not None and device.type in ("cpu", "cuda"), "device", "cpu, cuda or cuda:N")
    return cfg


def poisson_sample(n: int, q: float, *, size_generator: torch.Generator, index_generator: torch.Generator,
                   device) -> torch.Tensor:
    """PoissonSample (Definition 5): indices of a subset where each of the n examples is in
    independently with probability q. Drawn as |B| ~ Binomial(n, q) (on the host) and then a
    uniformly random subset of that size (on ``device``), which is the same distribution: given its
    size, an independent-Bernoulli subset is uniform over subsets of that size. Knowing |B| on the
    host avoids a device-to-host sync per step. The batch size varies; it can be empty, and then
    Algorithm 1 makes no update (the step still counts towards T for privacy).
    """
    b = int(torch.binomial(torch.tensor([float(n)]), torch.tensor([float(q)]), generator=size_generator).item())
    if b == 0:
        return torch.empty(0, dtype=torch.long, device=device)
    return torch.randperm(n, generator=index_generator, device=device)[:b]


@torch.no_grad()
def accuracy(model: torch.nn.Module, split: Split, *, batch: int = 1000, channels_last: bool = False) -> float:
    """Top-1 accuracy (%) of ``model`` in eval mode on a whole split."""
    was_training = model.training
    model.eval()
    correct = torch.zeros((), dtype=torch.long, device=split.x.device)
    for i in range(0, len(split), batch):
        x = split.x[i:i + batch]
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        correct += (model(x).argmax(1) == split.y[i:i + batch]).sum()
    model.train(was_training)
    return 100.0 * correct.item() / len(split)


def params_sha256(model: torch.nn.Module) -> str:
    """SHA-256 of all parameters and buffers, in state-dict order (bitwise identity of two models)."""
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def load_data(cfg: RunConfig, data_root=None) -> dict[str, Split]:
    """All splits of the run's data set on its device; the training split cut to ``train_subset``
    (a seeded random subset) when asked."""
    spec = get_spec(cfg.dataset)
    splits = {s: load(cfg.dataset, s, root=data_root) for s in spec.splits}
    if cfg.train_subset is not None and cfg.train_subset < len(splits["train"]):
        g = torch.Generator().manual_seed(cfg.seed)
        keep = torch.randperm(len(splits["train"]), generator=g)[: cfg.train_subset]
        splits["train"] = Split(splits["train"].x[keep], splits["train"].y[keep])
    return {k: v.to(cfg.device) for k, v in splits.items()}


def _save_atomic(obj, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


class Interrupted(Exception):
    """A run stopped by SIGTERM/SIGINT after writing its checkpoint: rerun the same command to resume."""

    def __init__(self, out: Path, step: int, steps: int):
        super().__init__(f"{out}: interrupted at step {step} of {steps}; checkpoint {out.name}.ckpt.pt written. "
                         "Rerun the same command to resume.")
        self.step = step


class _StopRequest:
    """While active, SIGTERM and SIGINT only set a flag: the loop finishes its step, writes a checkpoint and
    stops (a budget or a scheduler's kill then loses no work). Off the main thread it does nothing."""

    def __init__(self):
        self.requested = False
        self._old = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.requested = True

    def __exit__(self, *exc):
        for sig, handler in self._old.items():
            signal.signal(sig, handler)


def _lock(out: Path):
    """An exclusive lock on ``<out>.lock`` for the life of the run: two processes never train the same
    result (released by the OS when the process ends, however it ends)."""
    import fcntl

    fh = open(out.with_name(out.name + ".lock"), "a+")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        raise ValueError(f"another process is training {out} right now (lock {out.name}.lock is held); "
                         "wait for it or stop it first.") from None
    return fh


def is_running(out: str | os.PathLike) -> bool:
    """Whether a process holds the training lock of result ``out`` now."""
    import fcntl

    lock = Path(str(out) + ".lock")
    if not lock.exists():
        return False
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def _write_result(result: dict, out: Path) -> None:
    """The result JSON, written atomically (a reader never sees half a file)."""
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(provenance.jsonable(result), indent=1, default=str, allow_nan=False) + "\n")
    os.replace(tmp, out)


def train(cfg: RunConfig, out: str | os.PathLike, *, data: dict[str, Split] | None = None, data_root=None,
          progress: bool = True) -> dict:
    """Run Algorithm 1 for ``cfg`` and write the result JSON to ``out`` (resuming from
    ``<out>.ckpt.pt`` if a checkpoint of the same run is there). Returns the result record."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = _lock(out)
    try:
        with _StopRequest() as stop:
            return _train(cfg, out, data=data, data_root=data_root, progress=progress, stop=stop)
    finally:
        lock.close()


def _train(cfg: RunConfig, out: Path, *, data, data_root, progress: bool, stop: _StopRequest) -> dict:
    ckpt_path = out.with_name(out.name + ".ckpt.pt")
    device = torch.device(cfg.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {cfg.device!r} asked for, but torch sees no CUDA device. Use --device cpu.")
    spec = get_spec(cfg.dataset)
    data = data if data is not None else load_data(cfg, data_root)
    train_split = data["train"]
    n = len(train_split)
    if cfg.method == "latent":
        return _train_latent(cfg, out, data, progress=progress)

    dp_sgd = cfg.method in ("dpsgd", "tempered")
    r = calibration = None
    if cfg.private and dp_sgd:
        calibration = dpsgd.calibrate(eps=cfg.eps, delta=cfg.delta, q=cfg.q, steps=cfg.steps)
    elif cfg.private:
        r = accountant.rstar(eps=cfg.eps, alpha=cfg.alpha, q=cfg.q, steps=cfg.steps, delta=cfg.delta)
        spend = accountant.epsilon(r=r, alpha=cfg.alpha, q=cfg.q, steps=cfg.steps, delta=cfg.delta)

    torch.manual_seed(cfg.seed)  # default initialisation draws from the global generator
    net = build_model(cfg.model, num_classes=spec.num_classes, in_channels=spec.channels, width=cfg.width,
                      image_size=spec.size)
    if dp_sgd:
        net = dpsgd.make_compatible(net)  # BatchNorm -> GroupNorm (also at eps = inf: the same model)
    net = net.to(device)
    if cfg.channels_last:
        net = net.to(memory_format=torch.channels_last)
    opt_cls = torch.optim.SGD if cfg.optimizer == "sgd" else torch.optim.Adam
    opt = opt_cls(net.parameters(), lr=cfg.lr)
    g_size = torch.Generator().manual_seed(10_007 * cfg.seed + 1)
    g_dev = torch.Generator(device=device).manual_seed(10_007 * cfg.seed + 2)
    model = net
    if calibration is not None:
        model, opt = dpsgd.make_private(net, opt, n=n, q=cfg.q, noise_multiplier=calibration.noise_multiplier,
                                        max_grad_norm=cfg.max_grad_norm, generator=g_dev)

    prov = provenance.collect(dataclasses.asdict(cfg), seed=cfg.seed)  # the code that runs: taken at the start
    state = dict(step=0, elapsed=0.0, loss_curve=[], acc_curve=[], empty_batches=0, loss_sum=0.0, loss_n=0)
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location=device, weights_only=False)
        if ckpt["identity"] != cfg.identity():
            raise RuntimeError(f"{ckpt_path} belongs to a different run; delete it or choose another --out.\n"
                               f"checkpoint: {ckpt['identity']}\nthis run:   {cfg.identity()}")
        net.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        # generator states are CPU byte tensors for CPU and CUDA generators alike; map_location moved them
        g_size.set_state(ckpt["g_size"].cpu())
        g_dev.set_state(ckpt["g_dev"].cpu())
        state = ckpt["state"]
        print(f"resumed from step {state['step']} of {cfg.steps} ({ckpt_path})", file=sys.stderr, flush=True)

    def checkpoint():
        _save_atomic(dict(identity=cfg.identity(), model=net.state_dict(), optimizer=opt.state_dict(),
                          g_size=g_size.get_state(), g_dev=g_dev.get_state(), state=state), ckpt_path)

    model.train()
    loss_sum = torch.tensor(state["loss_sum"], device=device)  # the open logging window survives a resume
    loss_n = state["loss_n"]
    t_start = time.perf_counter() - state["elapsed"]
    bar = None
    if progress:
        label = (f"{cfg.method} {cfg.dataset} eps={cfg.eps:g}" + (f" r*={r:.4f}" if r else "")
                 + (f" sigma={calibration.noise_multiplier:.3f}" if calibration else "") + f" w={cfg.width:g}")
        bar = progress_bar(total=cfg.steps, initial=state["step"], desc=label)
    for step in range(state["step"], cfg.steps):
        idx = poisson_sample(n, cfg.q, size_generator=g_size, index_generator=g_dev, device=device)
        if idx.numel() == 0:
            state["empty_batches"] += 1
            if calibration is not None:
                dpsgd.noise_only_step(model, opt)
        else:
            x, y = train_split.x[idx], train_split.y[idx]
            if cfg.augment:
                x = random_crop_flip(x, g_dev)
            if cfg.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=cfg.bf16):
                logits = model(x)
            if r is not None:
                loss = dirichlet_nll(logits, y, r=r, alpha=cfg.alpha, generator=g_dev)
            else:
                loss = F.cross_entropy(logits.float(), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += loss.detach()
            loss_n += 1
        done = step + 1
        if done % cfg.log_every == 0 or done == cfg.steps:
            mean_loss = loss_sum.item() / max(loss_n, 1)
            state["loss_curve"].append([done, round(mean_loss, 5)])
            loss_sum.zero_()
            loss_n = 0
            if bar is not None:
                bar.set_postfix(loss=f"{mean_loss:.4f}", refresh=False)  # shown at the bar's next redraw
        if done % cfg.eval_every == 0 or done == cfg.steps:
            state["acc_curve"].append([done, accuracy(net, data["test"], channels_last=cfg.channels_last)])
            if bar is not None:
                bar.set_postfix(loss=state["loss_curve"][-1][1] if state["loss_curve"] else None,
                                test_acc=state["acc_curve"][-1][1])
        if bar is not None:
            bar.update(1)
        state["step"] = done
        if (done % cfg.checkpoint_every == 0 or stop.requested) and done < cfg.steps:
            state.update(elapsed=time.perf_counter() - t_start, loss_sum=loss_sum.item(), loss_n=loss_n)
            checkpoint()
            if stop.requested:
                if bar is not None:
                    bar.close()
                raise Interrupted(out, done, cfg.steps)
    if bar is not None:
        bar.close()
    wall = time.perf_counter() - t_start

    if calibration is not None:
        privacy = dict(epsilon=calibration.epsilon_rdp, epsilon_order=None, accountant="opacus rdp",
                       epsilon_prv=calibration.epsilon_prv, noise_multiplier=calibration.noise_multiplier,
                       max_grad_norm=cfg.max_grad_norm)
    elif cfg.private:
        privacy = dict(epsilon=spend.epsilon, epsilon_order=spend.order, accountant="Theorem 10 (dirdp.accountant)")
    else:
        privacy = dict(epsilon=math.inf, epsilon_order=None, accountant=None)
    result = dict(
        dataset=cfg.dataset, method=cfg.method, model=cfg.model, width=cfg.width,
        width_label="full width" if cfg.width == 1.0 else f"reduced width ({cfg.width:g}x channels)",
        eps_target=cfg.eps, delta=cfg.delta, alpha=cfg.alpha, q=cfg.q, steps=cfg.steps, seed=cfg.seed,
        rstar=r, **privacy,
        n_train=n, expected_batch=cfg.q * n, empty_batches=state["empty_batches"],
        test_accuracy=state["acc_curve"][-1][1],
        val_accuracy=accuracy(net, data["val"], channels_last=cfg.channels_last) if "val" in data else None,
        accuracy_curve=state["acc_curve"], loss_curve=state["loss_curve"],
        wall_time_s=round(wall, 2), steps_per_s=round(cfg.steps / wall, 3) if wall > 0 else None,
        params_sha256=params_sha256(net),
        provenance=dict(prov, wall_time_s=round(wall, 3)),
    )
    _write_result(result, out)
    torch.save(net.state_dict(), out.with_name(out.stem + ".model.pt"))
    ckpt_path.unlink(missing_ok=True)
    return result


def load_trained(result_path: str | os.PathLike, *, data_root=None) -> tuple[torch.nn.Module, dict[str, Split]]:
    """The model a run released (``<stem>.model.pt`` beside its result JSON), in eval mode, and the
    run's data with its training split exactly as the run saw it (``train_subset`` included), so
    that the training records can be told apart from the others. Not for LATENT runs (their model
    reads randomized bit strings, not images)."""
    result_path = Path(result_path)
    result = json.loads(result_path.read_text())
    cfg = RunConfig(**{"method": result.get("method", "alg1"), **result["provenance"]["config"], "device": "cpu"})
    if cfg.method == "latent":
        raise ValueError(f"{result_path} is a LATENT run: its model reads randomized bit strings, not images.")
    weights = result_path.with_name(result_path.stem + ".model.pt")
    if not weights.exists():
        raise FileNotFoundError(f"{weights} not found: the run's model is saved there when the run finishes.")
    spec = get_spec(cfg.dataset)
    net = build_model(cfg.model, num_classes=spec.num_classes, in_channels=spec.channels, width=cfg.width,
                      image_size=spec.size)
    if cfg.method in ("dpsgd", "tempered"):
        net = dpsgd.make_compatible(net)
    net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    return net.eval(), load_data(cfg, data_root)


def _train_latent(cfg: RunConfig, out: Path, data: dict[str, Split], *, progress: bool) -> dict:
    """LATENT (:mod:`dirdp.baselines.latent`) as a run: every record released once through the
    LATENT layer, the FC module trained for ``cfg.steps`` minibatches of q n records. Its epsilon is
    the paper's *local* DP claim per record; ``eps_ldp_worst_case`` is what the release really is."""
    from dirdp.baselines import latent

    spec = get_spec(cfg.dataset)
    prov = provenance.collect(dataclasses.asdict(cfg), seed=cfg.seed)
    n = len(data["train"])
    res = latent.train_latent(train=data["train"], test=data["test"], num_classes=spec.num_classes,
                              cfg=latent.LatentConfig(eps=cfg.eps, alpha=cfg.latent_alpha), steps=cfg.steps,
                              batch_size=max(1, round(cfg.q * n)), lr=cfg.lr, optimizer=cfg.optimizer, seed=cfg.seed,
                              eval_every=cfg.eval_every, log_every=cfg.log_every, progress=progress)
    wall = res["wall_time_s"]
    result = dict(
        dataset=cfg.dataset, method="latent", model="latent", width=cfg.width,
        width_label="LATENT: untrained conv module + FC module on randomized bits",
        eps_target=cfg.eps, delta=None, alpha=cfg.latent_alpha, q=cfg.q, steps=cfg.steps, seed=cfg.seed, rstar=None,
        epsilon=res["eps_claimed"], epsilon_order=None, accountant="LATENT's claim: eps-LDP per record",
        eps_ldp_worst_case=res["eps_ldp_worst_case"], eps_pair_median=res["eps_pair_median"],
        latent={k: v for k, v in res.items() if k not in ("accuracy_curve", "loss_curve")},
        n_train=n, expected_batch=round(cfg.q * n), empty_batches=0,
        test_accuracy=res["test_accuracy"], val_accuracy=None,
        accuracy_curve=res["accuracy_curve"], loss_curve=res["loss_curve"],
        wall_time_s=round(wall, 2), steps_per_s=round(cfg.steps / wall, 3) if wall > 0 else None,
        params_sha256=None, provenance=dict(prov, wall_time_s=round(wall, 3)),
    )
    _write_result(result, out)
    return result
