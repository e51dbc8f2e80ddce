"""One training run of any method end to end: its config, its data, its method from the registry
(:mod:`dirdp.methods`) driven by the one loop (:mod:`dirdp.loop`), its checkpoint and its result.

One run = one :class:`RunConfig` -> one result JSON with provenance. Rerunning the same command
after a kill resumes from ``<out>.ckpt.pt``; on CPU the resumed run ends with exactly the same
parameters (``params_sha256``) and accuracy as an uninterrupted one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

from dirdp import loop, methods, provenance
from dirdp.accountant import Q_RULE
from dirdp.data import Split, get_spec, load
from dirdp.models import norm_of
from dirdp.presets import get_preset
from dirdp.protocol import Protocol
from dirdp.run_result import weights_path
from dirdp.runfile import Interrupted, _lock, _save_atomic, _StopRequest, _write_result, check_writable


# training methods of `python -m dirdp train --method` (the registry: dirdp.methods)
METHODS = methods.DESCRIPTIONS


# fields RunConfig gained after runs were made: at their default they stay out of the identity, so that a
# checkpoint or result of an earlier commit (which has no such field) is still the same run
ADDED_LATER = {"norm": "batch", "conv_bias": False, "canaries": 0, "canary_seed": 0}


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
    method: str = methods.DEFAULT  # a key of METHODS
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
    norm: str = "batch"  # "group": every BatchNorm replaced by GroupNorm (dirdp.models.NORMS); DP-SGD always is
    conv_bias: bool = False  # a bias on every convolution, initialised as the paper's footnote 2 (PyTorch's default)
    canaries: int = 0  # the one-run audit (dirdp.canaries): m canaries, each trained on with probability 1/2
    canary_seed: int = 0  # which canaries, their labels and which of them are trained on (not the run's seed)

    @property
    def private(self) -> bool:
        return math.isfinite(self.eps)

    @property
    def precision(self) -> str:
        """What the model computes in: "bf16" (bf16 autocast; the mechanism's loss stays float32) or "fp32"."""
        return "bf16" if self.bf16 else "fp32"

    @property
    def protocol(self) -> Protocol:
        """(alpha, q, T, delta) of this run."""
        return Protocol(alpha=self.alpha, q=self.q, steps=self.steps, delta=self.delta)

    def identity(self) -> dict:
        """The fields a checkpoint must share with the run that resumes it."""
        d = dataclasses.asdict(self)
        for k in ("device", "eval_every", "log_every", "checkpoint_every"):
            d.pop(k)
        for k, default in ADDED_LATER.items():  # a run of the commits before the field existed had its default
            if d[k] == default:
                d.pop(k)
        return d


def make_config(dataset: str, eps: float, seed: int = 0, **overrides) -> RunConfig:
    """The paper's protocol for ``dataset`` (Section 4.1.2), with ``overrides`` (None = keep).
    Adam defaults to lr = 0.001 (Appendix G); CIFAR-10 turns augmentation on."""
    p = get_preset(dataset)
    overrides = {k: v for k, v in overrides.items() if v is not None}
    method = methods.get(overrides.get("method", methods.DEFAULT))
    optimizer = overrides.pop("optimizer", None) or method.optimizer or "sgd"  # LATENT's FC module: Adam
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam'. Found {optimizer!r}.")
    if method.finite_eps_only and not math.isfinite(eps):
        raise ValueError(f"{method.name} randomizes with a finite eps. Found eps=inf.")
    if method.model is not None:
        overrides.setdefault("model", method.model)
    base = dict(dataset=p.name, eps=float(eps), seed=seed, steps=p.steps, q=p.q, alpha=p.alpha, delta=p.delta,
                lr=0.001 if optimizer == "adam" else p.lr, optimizer=optimizer, model=p.model,
                augment=p.name == "cifar10")
    base.update(overrides)
    return _validated(RunConfig(**base))


MIN_WIDTH = 1 / 16  # the smallest width at which every layer of every model has >= 1 channel unrounded


def _validated(cfg: RunConfig) -> RunConfig:
    """``cfg`` if every field is in its domain, else a ValueError naming the field, what was found and what
    is allowed (the CLI prints it and exits 2 before any work starts)."""
    from dirdp.models import MODELS, NORMS

    def need(ok: bool, field: str, allowed: str):
        if not ok:
            raise ValueError(f"{field} must be {allowed}. Found {field}={getattr(cfg, field)!r}.")

    # one interval for every run, Theorem 10's (a non-private run could take q = 1; a run's q means the same whatever
    # its method, and the accountant's message names the same interval)
    need(0 < cfg.q < 1, "q", Q_RULE)
    need(cfg.steps >= 1, "steps", "at least 1")
    need(0 < cfg.alpha < math.inf, "alpha", "> 0 and finite")
    need(0 < cfg.delta < 1, "delta", "in (0, 1)")
    need(0 < cfg.lr < math.inf, "lr", "> 0 and finite")
    # below 1/16 the narrowest layers (16 channels at width 1: the Papernot CNN's first conv) get fewer than one
    # channel, which models.py can only round up to 1: the multiplier would no longer say what the model is
    need(MIN_WIDTH <= cfg.width <= 8, "width", f"a channel multiplier in [{MIN_WIDTH:g}, 8] (below 1/16 the "
                                                "narrowest layers, 16 channels at width 1, get less than one channel)")
    need(cfg.train_subset is None or cfg.train_subset >= 1, "train_subset", "at least 1 record")
    for field in ("eval_every", "log_every", "checkpoint_every"):
        need(getattr(cfg, field) >= 1, field, "at least 1 step")
    need(0 < cfg.max_grad_norm < math.inf, "max_grad_norm", "> 0 and finite")
    need(cfg.model in MODELS or cfg.model in methods.NON_IMAGE_MODELS, "model", f"one of {', '.join(MODELS)}")
    need(cfg.norm in NORMS, "norm", f"one of {', '.join(NORMS)}")
    need(cfg.canaries >= 0, "canaries", "0 (no canaries) or more")
    need(cfg.canaries == 0 or getattr(methods.SPECS.get(cfg.method), "images", True), "canaries",
         f"0 for {methods.LABELS.get(cfg.method)} (the one-run audit inserts images)")
    need(not cfg.conv_bias or getattr(methods.SPECS.get(cfg.method), "images", True), "conv_bias",
         f"False for {methods.LABELS.get(cfg.method)} (its modules are not the image models)")
    need(cfg.norm == "batch" or getattr(methods.SPECS.get(cfg.method), "images", True), "norm",
         f"batch for {methods.LABELS.get(cfg.method)} (its modules have no normalisation layer)")
    try:
        device = torch.device(cfg.device)
    except (RuntimeError, ValueError):
        device = None
    need(device is not None and device.type in ("cpu", "cuda"), "device", "cpu, cuda or cuda:N")
    return cfg


def load_data(cfg: RunConfig, data_root=None) -> dict[str, Split]:
    """All splits of the run's data set on its device; the training split cut to ``train_subset``
    (a seeded random subset) when asked."""
    spec = get_spec(cfg.dataset)
    splits = {s: load(cfg.dataset, s, root=data_root) for s in spec.splits}
    if cfg.train_subset is not None and cfg.train_subset < len(splits["train"]):
        g = torch.Generator().manual_seed(cfg.seed)
        keep = torch.randperm(len(splits["train"]), generator=g)[: cfg.train_subset]
        splits["train"] = Split(splits["train"].x[keep], splits["train"].y[keep])
    if cfg.canaries:  # the one-run audit: the canaries drawn to be trained on join the training split, after it
        from dirdp.canaries import with_canaries

        splits["train"] = with_canaries(splits["train"], cfg, data_root)
    return {k: v.to(cfg.device) for k, v in splits.items()}


def train(cfg: RunConfig, out: str | os.PathLike, *, data: dict[str, Split] | None = None, data_root=None,
          progress: bool = True) -> dict:
    """Run Algorithm 1 for ``cfg`` and write the result JSON to ``out`` (resuming from
    ``<out>.ckpt.pt`` if a checkpoint of the same run is there). Returns the result record. The method's
    calibration (an eps below what its accountant can certify: a ValueError) runs first, before any folder,
    lock or data."""
    out = Path(out)
    noise = methods.get(cfg.method).calibrate(cfg.eps, cfg.protocol, max_grad_norm=cfg.max_grad_norm)
    check_writable(out)  # before any work: a result that could not be written would be lost with the run
    lock = _lock(out)
    try:
        with _StopRequest() as stop:
            return _train(cfg, out, noise, data=data, data_root=data_root, progress=progress, stop=stop)
    finally:
        lock.release()  # the lock file goes with the lock: none is left after a run, whatever ended it


def _train(cfg: RunConfig, out: Path, noise, *, data, data_root, progress: bool, stop: _StopRequest) -> dict:
    ckpt_path = out.with_name(out.name + ".ckpt.pt")
    device = torch.device(cfg.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {cfg.device!r} asked for, but torch sees no CUDA device. Use --device cpu.")
    spec = get_spec(cfg.dataset)
    data = data if data is not None else load_data(cfg, data_root)
    method = methods.get(cfg.method)
    with loop.isolated_rng(device):
        learner = method.learner(cfg, data, spec, noise)
        prov = provenance.collect(dataclasses.asdict(cfg), seed=cfg.seed)  # the code that runs: taken at the start
        state = None
        if ckpt_path.exists():
            ckpt = _load_checkpoint(ckpt_path, cfg, device)
            learner.load_state_dict(ckpt)
            state = ckpt["state"]
            print(f"resumed from step {state['step']} of {cfg.steps} ({ckpt_path})", file=sys.stderr, flush=True)
        if state is None:
            state = loop.new_state()
            if cfg.canaries:  # theta_0 as trained from, for the one-run audit's check of the theta_0 it rebuilds
                state["theta0_sha256"] = loop.params_sha256(learner.net)
        state.setdefault("sessions", []).append(_session(state["step"], prov, device))

        def checkpoint(state):
            _save_atomic(dict(identity=cfg.identity(), **learner.state_dict(), state=state), ckpt_path)

        try:
            state, wall = loop.run(learner, steps=cfg.steps, eval_every=cfg.eval_every, log_every=cfg.log_every,
                                   checkpoint_every=cfg.checkpoint_every, state=state, checkpoint=checkpoint,
                                   stop=stop, progress=progress)
        except loop.Stopped as stopped:
            raise Interrupted(out, stopped.step, cfg.steps) from None
        wall += getattr(learner, "setup_s", 0.0)  # LATENT: the release of every record before its first step
        fields = method.result_fields(cfg, learner, noise, state, wall)
        if cfg.canaries:  # the one-run audit's record: each canary's scores from theta_0 and theta_T
            from dirdp.canaries import run_record

            one_run = run_record(cfg, learner.net, lambda: method.build_model(cfg, spec), data_root, state)
    result = dict(
        dataset=cfg.dataset, method=cfg.method, model=fields["model"], width=cfg.width,
        width_label=fields["width_label"], norm=fields.get("norm") or norm_of(learner.net), eps_target=cfg.eps,
        delta=fields["delta"], alpha=fields["alpha"], precision=cfg.precision, channels_last=cfg.channels_last,
        q=cfg.q, steps=cfg.steps, seed=cfg.seed, rstar=fields["rstar"], **fields["privacy"],
        n_train=len(data["train"]), expected_batch=fields["expected_batch"], empty_batches=state["empty_batches"],
        test_accuracy=state["acc_curve"][-1][1], val_accuracy=fields["val_accuracy"],
        accuracy_curve=state["acc_curve"], loss_curve=state["loss_curve"],
        wall_time_s=round(wall, 2), steps_per_s=round(cfg.steps / wall, 3) if wall > 0 else None,
        params_sha256=fields["params_sha256"],
        provenance=dict(prov, wall_time_s=round(wall, 3), sessions=state["sessions"]),
    )
    if cfg.canaries:
        result["one_run"] = one_run
    _write_result(result, out)
    if fields["params_sha256"] is not None:
        torch.save(learner.net.state_dict(), weights_path(out))
    ckpt_path.unlink(missing_ok=True)
    return result


def _session(step: int, prov: dict, device) -> dict:
    """One session of a run (a start, or a resume from its checkpoint): the step it began at, the code it ran, its
    torch threads and its processor (``processor``: the CPU's model name, or the GPU's). On CPU the thread count
    changes the order of float sums, so the weights: a run resumed with another count is not the run an
    uninterrupted one would have been; and a run resumed on another machine has a wall time summed over both. A
    checkpoint written before sessions were recorded starts the list at its resume step (the sessions before it
    are unknown); a session recorded before ``processor`` was has none (:func:`dirdp.run_result.devices`). A session
    of uncommitted code ("+dirty") also records ``dirty_files`` and ``dirty_diff_sha256``
    (:func:`dirdp.provenance.git_state`)."""
    dirty = {k: prov.get(k) for k in ("dirty_files", "dirty_diff_sha256")} if "dirty_files" in prov else {}
    return dict(start_step=int(step), git_commit=prov["git_commit"], torch_threads=torch.get_num_threads(),
                device=str(device), processor=prov["device"], started_utc=prov["created_utc"], **dirty)


def _load_checkpoint(path: Path, cfg: RunConfig, device) -> dict:
    """The checkpoint at ``path`` if it belongs to this run; a ValueError naming the file otherwise."""
    try:
        ckpt = torch.load(path, map_location=device, weights_only=False)
    except Exception as err:  # truncated, empty, not a checkpoint: torch raises several kinds
        raise ValueError(f"{path} is not a readable checkpoint ({type(err).__name__}: {err}); delete it to "
                         "start the run from step 0.") from None
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("identity"), dict):
        raise ValueError(f"{path} is not a checkpoint of dirdp.training; delete it to start the run from step 0.")
    theirs = "bf16" if ckpt["identity"].get("bf16") else "fp32"
    if theirs != cfg.precision:  # the one mismatch a user makes by a flag: say which precision the run has
        raise CheckpointMismatch(f"{path} is a checkpoint of a {theirs} run; a run resumes only in the precision it "
                                 f"started in: resume it {'with' if theirs == 'bf16' else 'without'} --bf16, or "
                                 "choose another --out.")
    if ckpt["identity"] != cfg.identity():
        diff = ", ".join(f"{k}: {ckpt['identity'].get(k)!r} there, {v!r} here" for k, v in cfg.identity().items()
                         if ckpt["identity"].get(k) != v)
        raise CheckpointMismatch(f"{path} belongs to a different run ({diff}); delete it or choose another --out.")
    if "state" not in ckpt:
        raise ValueError(f"{path} has no training state; delete it to start the run from step 0.")
    return ckpt


class CheckpointMismatch(ValueError, RuntimeError):
    """A checkpoint of another run where this run would resume (a ValueError: the CLI says so and exits 2)."""


def untrained_model(result_path: str | os.PathLike) -> tuple[torch.nn.Module, RunConfig]:
    """(the run's model at initialisation, drawn from the run's seed without touching the global random state, in
    eval mode; the run's config on the CPU): the architecture a result JSON names, before any record was seen."""
    result = json.loads(Path(result_path).read_text())
    cfg = RunConfig(**{"method": result.get("method", methods.DEFAULT), **result["provenance"]["config"], "device": "cpu"})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        try:
            net = methods.get(cfg.method).build_model(cfg, get_spec(cfg.dataset))
        except ValueError as err:  # LATENT: no image model
            raise ValueError(f"{result_path} {err}") from None
    return net.eval(), cfg


def load_trained(result_path: str | os.PathLike, *, data_root=None,
                 with_data: bool = True) -> tuple[torch.nn.Module, dict[str, Split] | None]:
    """The model a run released (``<stem>.model.pt`` beside its result JSON), in eval mode, and the
    run's data with its training split exactly as the run saw it (``train_subset`` included), so
    that the training records can be told apart from the others (None with ``with_data=False``: the model
    alone, no data set read). Not for LATENT runs (their model reads randomized bit strings, not images)."""
    result_path = Path(result_path)
    net, cfg = untrained_model(result_path)
    weights = weights_path(result_path)
    if not weights.exists():
        raise FileNotFoundError(f"{weights} not found: the run's model is saved there when the run finishes.")
    net.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True))
    return net.eval(), (load_data(cfg, data_root) if with_data else None)
