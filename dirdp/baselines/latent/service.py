"""The untrusted service's side of LATENT: the fully connected module trained on the released bit strings,
by the package's one training loop (:mod:`dirdp.loop`). See :mod:`dirdp.baselines.latent`."""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F
from torch import nn

from dirdp import loop
from dirdp.baselines.latent.config import LatentConfig
from dirdp.baselines.latent.encoding import cfg_probabilities, conv_module_default, encode_dataset
from dirdp.baselines.latent.randomizer import pair_epsilon
from dirdp.data import Split


def fc_module(length: int, num_classes: int, *, hidden: int = 128, dropout: float = 0.5) -> nn.Sequential:
    """The fully connected module trained on the released strings."""
    return nn.Sequential(nn.Linear(length, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, num_classes))


@torch.no_grad()
def _accuracy(model: nn.Module, bits: torch.Tensor, y: torch.Tensor, batch: int = 2000) -> float:
    was_training = model.training
    model.eval()
    correct = sum(int((model(bits[i:i + batch].float()).argmax(1) == y[i:i + batch]).sum())
                  for i in range(0, len(y), batch))
    model.train(was_training)
    return 100.0 * correct / max(len(y), 1)


class LatentLearner(loop.Learner):
    """LATENT as the loop sees it: at construction every training (and test) record is released once through
    the LATENT layer; each step then trains the FC module on ``batch_size`` released strings drawn without
    replacement (a fresh permutation each epoch). Build it inside :func:`dirdp.loop.isolated_rng`: it seeds the
    global generator (FC initialisation, dropout) with ``seed``."""

    loss_dtype = torch.float64  # the loss of each step is summed in float64 (as LATENT's own loop did)

    def __init__(self, *, train: Split, test: Split, num_classes: int, cfg: LatentConfig,
                 conv_module: nn.Module | None = None, batch_size: int = 128, lr: float = 1e-3,
                 optimizer: str = "adam", hidden: int = 128, dropout: float = 0.5, seed: int = 0,
                 encode_batch: int = 1000, pair_sample: int = 200):
        if optimizer not in ("adam", "sgd"):
            raise ValueError(f"optimizer must be 'adam' or 'sgd'. Found optimizer={optimizer!r}.")
        if int(batch_size) != batch_size or batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1. Found batch_size={batch_size}.")
        if len(train) == 0 or len(test) == 0:
            raise ValueError(f"train and test must be non-empty. Found {len(train)} and {len(test)} records.")
        t0 = time.perf_counter()
        self.cfg, self.train, self.test, self.batch_size = cfg, train, test, int(batch_size)
        self.options = dict(lr=lr, optimizer=optimizer, hidden=hidden, dropout=dropout, seed=seed)
        self.device = train.x.device
        conv = (conv_module if conv_module is not None else conv_module_default(train.x.shape[1], seed)).to(self.device)
        g_train = torch.Generator(device=self.device).manual_seed(10_007 * seed + 11)
        g_test = torch.Generator(device=self.device).manual_seed(10_007 * seed + 12)
        self.g_batch = torch.Generator().manual_seed(10_007 * seed + 13)
        self.train_bits = encode_dataset(conv, train, cfg, generator=g_train, batch=encode_batch)
        self.test_bits = encode_dataset(conv, test, cfg, generator=g_test, batch=encode_batch,
                                        randomize_bits=cfg.randomize_test)
        length = self.train_bits.shape[1]
        self.probs = cfg_probabilities(cfg, length)
        n_pairs = min(pair_sample, len(train) - 1)
        self.eps_pair = None
        if n_pairs >= 1:
            clean = encode_dataset(conv, Split(train.x[:n_pairs + 1], train.y[:n_pairs + 1]), cfg,
                                   generator=g_train, randomize_bits=False)
            self.eps_pair = float(pair_epsilon(clean[:-1], clean[1:], self.probs).median())
        self.setup_s = time.perf_counter() - t0

        torch.manual_seed(seed)  # FC initialisation and dropout
        self.model = fc_module(length, num_classes, hidden=hidden, dropout=dropout).to(self.device)
        self.opt = (torch.optim.Adam if optimizer == "adam" else torch.optim.SGD)(self.model.parameters(), lr=lr)
        self.order, self.pos = torch.randperm(len(train), generator=self.g_batch), 0
        self.model.train()
        self.label = f"LATENT {cfg.mechanism} eps={cfg.eps:g} alpha={cfg.alpha:g}"

    def batch(self) -> torch.Tensor:
        n = len(self.train)
        if self.pos + self.batch_size > n and self.pos > 0:  # new epoch: a fresh permutation
            self.order, self.pos = torch.randperm(n, generator=self.g_batch), 0
        idx = self.order[self.pos:self.pos + self.batch_size].to(self.device)
        self.pos += self.batch_size
        return idx

    def step(self, idx: torch.Tensor) -> torch.Tensor:
        loss = F.cross_entropy(self.model(self.train_bits[idx].float()), self.train.y[idx])
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def evaluate(self) -> float:
        return _accuracy(self.model, self.test_bits, self.test.y)

    def state_dict(self) -> dict:
        return dict(model=self.model.state_dict(), optimizer=self.opt.state_dict(), g_batch=self.g_batch.get_state(),
                    order=self.order, pos=self.pos, torch_rng=torch.get_rng_state())

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.g_batch.set_state(state["g_batch"].cpu())
        self.order, self.pos = state["order"].cpu(), state["pos"]
        torch.set_rng_state(state["torch_rng"].cpu())

    def record(self, state: dict, wall: float, steps: int) -> dict:
        """The LATENT record: accuracy, the release's claimed and exact epsilons, and what was trained (a run's result
        JSON carries it under ``latent``, its method's name first: :mod:`dirdp.methods.latent`)."""
        cfg, o = self.cfg, self.options
        return dict(
            guarantee="local DP per record (as claimed by the paper; see eps_ldp_worst_case)",
            mechanism=cfg.mechanism, split=cfg.split, alpha=cfg.alpha,
            eps_claimed=cfg.eps, eps_per_bit=self.probs.eps_per_bit, sensitivity=self.probs.sensitivity,
            eps_ldp_worst_case=self.probs.worst_case_epsilon(), eps_pair_median=self.eps_pair,
            int_bits=cfg.int_bits, frac_bits=cfg.frac_bits, bits_per_value=cfg.bits_per_value,
            n_features=self.train_bits.shape[1] // cfg.bits_per_value, string_length=self.train_bits.shape[1],
            randomize_test=cfg.randomize_test, probabilities=self.probs.summary(),
            ones_fraction_released=float(self.train_bits.float().mean()),
            n_train=len(self.train), n_test=len(self.test), steps=steps, batch_size=self.batch_size, lr=o["lr"],
            optimizer=o["optimizer"], hidden=o["hidden"], dropout=o["dropout"], seed=o["seed"],
            test_accuracy=state["acc_curve"][-1][1], train_accuracy=_accuracy(self.model, self.train_bits, self.train.y),
            accuracy_curve=state["acc_curve"], loss_curve=state["loss_curve"],
            encode_time_s=round(self.setup_s, 3), wall_time_s=round(self.setup_s + wall, 3),
        )


def train_latent(*, train: Split, test: Split, num_classes: int, cfg: LatentConfig,
                 conv_module: nn.Module | None = None, steps: int = 2000, batch_size: int = 128, lr: float = 1e-3,
                 optimizer: str = "adam", hidden: int = 128, dropout: float = 0.5, seed: int = 0,
                 eval_every: int = 500, log_every: int = 50, encode_batch: int = 1000, pair_sample: int = 200,
                 progress: bool = False) -> dict:
    """LATENT end to end: release every training (and test) record once through the LATENT layer,
    then train the FC module on the released strings for ``steps`` minibatch steps (shuffled
    epochs) with ``optimizer`` ("adam" or "sgd") at ``lr``.

    ``conv_module``: the data owner's frozen module (None: :func:`conv_module` for the training
    images' channels, seeded with ``seed``). Returns a record with ``test_accuracy`` (%, last
    evaluation), ``accuracy_curve`` [[step, acc]], ``loss_curve`` [[step, mean loss]], the string
    length, the per-bit probabilities (``probabilities``), ``eps_claimed`` (the paper's per-record
    LDP claim), ``eps_ldp_worst_case`` (the exact LDP epsilon of the release), and
    ``eps_pair_median``: the median exact loss between ``pair_sample`` pairs of actual training
    records (consecutive records' clean strings).
    """
    for name, v in (("steps", steps), ("batch_size", batch_size), ("eval_every", eval_every),
                    ("log_every", log_every)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be an integer >= 1. Found {name}={v}.")
    with loop.isolated_rng(train.x.device):
        learner = LatentLearner(train=train, test=test, num_classes=num_classes, cfg=cfg, conv_module=conv_module,
                                batch_size=batch_size, lr=lr, optimizer=optimizer, hidden=hidden, dropout=dropout,
                                seed=seed, encode_batch=encode_batch, pair_sample=pair_sample)
        state, wall = loop.run(learner, steps=steps, eval_every=eval_every, log_every=log_every, progress=progress)
        return learner.record(state, wall, steps)
