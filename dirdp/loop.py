"""The one training loop of every method: steps, progress bar, the logging window, evaluation, checkpoints.

A method supplies a *learner* (:class:`Learner`): how to draw a batch, how one step updates the model, what
an empty batch does, how the model is evaluated and what its checkpoint holds. The loop owns everything
else, identically for Algorithm 1, DP-SGD and LATENT:

- ``state``: ``step``, ``elapsed`` (s), ``loss_curve`` [[step, mean loss over the window]], ``acc_curve``
  [[step, test accuracy %]], ``empty_batches``, and the open logging window ``loss_sum``/``loss_n`` — a
  plain dict that a checkpoint stores as it is, so a resumed run continues every curve exactly;
- the loss of each step is accumulated on the device (no host sync per step) in the learner's
  ``loss_dtype``; every ``log_every`` steps its mean enters the loss curve;
- every ``eval_every`` steps, and at the last, the test accuracy enters the accuracy curve;
- every ``checkpoint_every`` steps (and when ``stop.requested``) ``checkpoint(state)`` is called; after a stop
  request the loop raises :class:`Stopped`.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import time

import torch


class Learner:
    """What the loop drives (subclass it; see :mod:`dirdp.methods`)."""

    label: str = "training"  # the progress bar's description
    loss_dtype: torch.dtype = torch.float32
    device: torch.device = torch.device("cpu")

    def batch(self):
        """The next batch, or None for an empty Poisson batch."""
        raise NotImplementedError

    def step(self, batch) -> torch.Tensor:
        """One update on ``batch``; returns the (detached) scalar loss."""
        raise NotImplementedError

    def empty_step(self) -> None:
        """What an empty batch does (Algorithm 1: nothing; DP-SGD: a noise-only update)."""

    def evaluate(self) -> float:
        """Test accuracy (%) now."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        raise NotImplementedError

    def load_state_dict(self, state: dict) -> None:
        raise NotImplementedError


class Stopped(Exception):
    """The loop stopped at ``step`` on request, after its checkpoint was written."""

    def __init__(self, step: int):
        super().__init__(f"stopped at step {step}")
        self.step = step


def new_state() -> dict:
    return dict(step=0, elapsed=0.0, loss_curve=[], acc_curve=[], empty_batches=0, loss_sum=0.0, loss_n=0)


def progress_bar(*, total: int, desc: str, initial: int = 0):
    """A tqdm bar over training steps: live in a terminal, one line every 30 s in a log file (DAG jobs)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit="step", dynamic_ncols=True,
                mininterval=0.1 if sys.stderr.isatty() else 30.0)


@contextlib.contextmanager
def isolated_rng(device: torch.device):
    """The global torch generators (CPU, and ``device``'s if CUDA) as they were, once the block ends: a run
    seeds them for its initialisation and dropout without changing its caller's random state."""
    cuda = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=cuda):
        yield


def run(learner: Learner, *, steps: int, eval_every: int, log_every: int, checkpoint_every: int | None = None,
        state: dict | None = None, checkpoint=None, stop=None, progress: bool = False) -> tuple[dict, float]:
    """Train ``learner`` from ``state`` (default: step 0) to ``steps``; returns (state, wall seconds of all
    sessions of this run). ``checkpoint``: called with the state every ``checkpoint_every`` steps before the
    end and on a stop request; ``stop``: anything with a ``requested`` flag (SIGTERM/SIGINT)."""
    state = state if state is not None else new_state()
    loss_sum = torch.tensor(state["loss_sum"], dtype=learner.loss_dtype, device=learner.device)
    loss_n = state["loss_n"]
    t_start = time.perf_counter() - state["elapsed"]
    bar = progress_bar(total=steps, initial=state["step"], desc=learner.label) if progress else None
    try:
        for step in range(state["step"], steps):
            batch = learner.batch()
            if batch is None:
                state["empty_batches"] += 1
                learner.empty_step()
            else:
                loss_sum += learner.step(batch)
                loss_n += 1
            done = step + 1
            if done % log_every == 0 or done == steps:
                mean_loss = loss_sum.item() / max(loss_n, 1)
                state["loss_curve"].append([done, round(mean_loss, 5)])
                loss_sum.zero_()
                loss_n = 0
                if bar is not None:
                    bar.set_postfix(loss=f"{mean_loss:.4f}", refresh=False)  # shown at the bar's next redraw
            if done % eval_every == 0 or done == steps:
                state["acc_curve"].append([done, learner.evaluate()])
                if bar is not None:
                    bar.set_postfix(loss=state["loss_curve"][-1][1] if state["loss_curve"] else None,
                                    test_acc=state["acc_curve"][-1][1])
            if bar is not None:
                bar.update(1)
            state["step"] = done
            stopping = stop is not None and stop.requested
            if checkpoint is not None and done < steps and (
                    stopping or (checkpoint_every and done % checkpoint_every == 0)):
                state.update(elapsed=time.perf_counter() - t_start, loss_sum=loss_sum.item(), loss_n=loss_n)
                checkpoint(state)
            if stopping and done < steps:
                raise Stopped(done)
    finally:
        if bar is not None:
            bar.close()
    return state, time.perf_counter() - t_start


@torch.no_grad()
def accuracy(model: torch.nn.Module, split, *, batch: int = 1000, channels_last: bool = False) -> float:
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
