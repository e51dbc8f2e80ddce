"""Models of Section 4.1.1, PyTorch default initialisation (Algorithm 1), no in-place operations.

Every model takes ``width``, a multiplier on all channel counts (1.0 = the published layout).
On CPU the paper's privacy protocol (q, T, alpha, lr, eps) is kept and the width reduced; such
results are labelled "reduced width" in their result files.
"""

from __future__ import annotations

import math

import torch
from torch import nn

# --norm: what normalises the models' activations. "batch" (the paper's models) couples the examples of a batch in
# train mode (each output depends on the batch's statistics) and keeps noise-free running statistics; "group"
# (GroupNorm) computes each example's output from that example alone, as DP-SGD needs and Theorem 10's per-record
# premise assumes.
NORMS = ("batch", "group")


def _c(channels: int, width: float) -> int:
    return max(1, round(channels * width))


class ConvBNReLU(nn.Sequential):
    """Conv (no bias; ``build_model(..., conv_bias=True)`` adds one) -> BatchNorm -> ReLU."""

    def __init__(self, c_in: int, c_out: int, kernel: int, stride: int = 1, padding: int | str = "same"):
        if padding == "same":
            padding = kernel // 2
        super().__init__(nn.Conv2d(c_in, c_out, kernel, stride, padding, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


# ---------------------------------------------------------------------------------------- Inception

class _InceptionModule(nn.Module):
    """1x1 branch || 3x3 branch, concatenated (Zhang et al. 2017, Fig. 3)."""

    def __init__(self, c_in: int, ch1: int, ch3: int):
        super().__init__()
        self.b1 = ConvBNReLU(c_in, ch1, 1)
        self.b3 = ConvBNReLU(c_in, ch3, 3)

    def forward(self, x):
        return torch.cat([self.b1(x), self.b3(x)], dim=1)


class _DownsampleModule(nn.Module):
    """3x3 stride-2 conv || 3x3 stride-2 max-pool, concatenated."""

    def __init__(self, c_in: int, ch3: int):
        super().__init__()
        self.conv = ConvBNReLU(c_in, ch3, 3, stride=2, padding=0)
        self.pool = nn.MaxPool2d(3, stride=2)

    def forward(self, x):
        return torch.cat([self.conv(x), self.pool(x)], dim=1)


class SmallInception(nn.Module):
    """The simplified ("small") Inception of Zhang et al. (2017, "Understanding deep learning
    requires rethinking generalization", Fig. 3), after Szegedy et al. (2015), used by the paper for
    MNIST and FashionMNIST. We chose it because it is the standard "simplified Inception following
    Szegedy et al." for 28-32 px inputs, and its cost matches what the paper's timings imply.

    conv 3x3/96 -> Inc(32,32) -> Inc(32,48) -> Down(80) -> Inc(112,48) -> Inc(96,64) -> Inc(80,80)
    -> Inc(48,96) -> Down(96) -> Inc(176,160) -> Inc(176,160) -> global mean pool -> linear.
    Each conv is followed by BatchNorm and ReLU. About 1.6M parameters at width 1.
    """

    def __init__(self, num_classes: int = 10, in_channels: int = 1, width: float = 1.0):
        super().__init__()
        w = width
        layers: list[nn.Module] = [ConvBNReLU(in_channels, _c(96, w), 3)]
        c = _c(96, w)
        plan = [("i", 32, 32), ("i", 32, 48), ("d", 80), ("i", 112, 48), ("i", 96, 64), ("i", 80, 80),
                ("i", 48, 96), ("d", 96), ("i", 176, 160), ("i", 176, 160)]
        for kind, *ch in plan:
            if kind == "i":
                layers.append(_InceptionModule(c, _c(ch[0], w), _c(ch[1], w)))
                c = _c(ch[0], w) + _c(ch[1], w)
            else:
                layers.append(_DownsampleModule(c, _c(ch[0], w)))
                c = _c(ch[0], w) + c
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean(dim=(2, 3)))


# ---------------------------------------------------------------------------------------- ResNets

class _BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + self.shortcut(x))


class ResNet18(nn.Module):
    """ResNet-18 (He et al. 2016) in its CIFAR form: 3x3 stride-1 stem, no max-pool, four stages
    of two basic blocks (64, 128, 256, 512 channels; stride 1, 2, 2, 2), BatchNorm, global average
    pool, linear. Used for CIFAR10 and SVHN (Section 4.1.1). 11.2M parameters at width 1."""

    def __init__(self, num_classes: int = 10, in_channels: int = 3, width: float = 1.0):
        super().__init__()
        c = _c(64, width)
        self.stem = ConvBNReLU(in_channels, c, 3)
        blocks = []
        for i, planes in enumerate((64, 128, 256, 512)):
            out = _c(planes, width)
            for j in range(2):
                blocks.append(_BasicBlock(c, out, stride=2 if (i > 0 and j == 0) else 1))
                c = out
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean(dim=(2, 3)))


class _Residual(nn.Module):
    def __init__(self, c: int):
        super().__init__()
        self.body = nn.Sequential(ConvBNReLU(c, c, 3), ConvBNReLU(c, c, 3))

    def forward(self, x):
        return x + self.body(x)


class ResNet9(nn.Module):
    """ResNet-9 as used by Hölzl et al. (2022) for DermaMNIST (the DAWNBench ResNet-9 of Page, 2018,
    as in Klause et al. 2022), with BatchNorm as in the paper (§4.2.3, footnote 5):

    conv 64 -> conv 128, max-pool 2 -> residual(conv 128, conv 128) -> conv 256, max-pool 2
    -> conv 512, max-pool 2 -> residual(conv 512, conv 512) -> global max-pool -> linear.
    """

    def __init__(self, num_classes: int = 7, in_channels: int = 3, width: float = 1.0):
        super().__init__()
        c = [_c(k, width) for k in (64, 128, 256, 512)]
        self.net = nn.Sequential(
            ConvBNReLU(in_channels, c[0], 3),
            ConvBNReLU(c[0], c[1], 3), nn.MaxPool2d(2), _Residual(c[1]),
            ConvBNReLU(c[1], c[2], 3), nn.MaxPool2d(2),
            ConvBNReLU(c[2], c[3], 3), nn.MaxPool2d(2), _Residual(c[3]),
        )
        self.fc = nn.Linear(c[3], num_classes)

    def forward(self, x):
        return self.fc(self.net(x).amax(dim=(2, 3)))


# ---------------------------------------------------------------------------------------- baseline CNN

class TemperedSigmoid(nn.Module):
    """Tempered sigmoid of Papernot et al. (2021): phi(x) = s * sigmoid(T x) - o, with scale s,
    inverse temperature T and offset o. (s, T, o) = (2, 2, 1) is exactly tanh. Bounded, so the
    activations (and the per-example gradients DP-SGD clips) cannot explode."""

    def __init__(self, s: float = 2.0, T: float = 2.0, o: float = 1.0):
        super().__init__()
        self.s, self.T, self.o = float(s), float(T), float(o)

    def forward(self, x):
        return self.s * torch.sigmoid(self.T * x) - self.o

    def extra_repr(self) -> str:
        return f"s={self.s:g}, T={self.T:g}, o={self.o:g}"


class PapernotCNN(nn.Module):
    """The MNIST/FashionMNIST CNN of Papernot et al. (2021, "Tempered sigmoid activations"):
    conv 16 8x8 stride 2 (same) -> max-pool 2 stride 1 -> conv 32 4x4 stride 2 (valid) -> max-pool 2
    stride 1 -> linear 32 -> linear d, every activation a :class:`TemperedSigmoid` (default tanh,
    the setting of their Section 5.2). No normalisation layers: DP-SGD (Opacus) compatible."""

    def __init__(self, num_classes: int = 10, in_channels: int = 1, width: float = 1.0, image_size: int = 28,
                 s: float = 2.0, T: float = 2.0, o: float = 1.0):
        super().__init__()
        c1, c2, h = _c(16, width), _c(32, width), _c(32, width)
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, c1, 8, 2, padding=3), TemperedSigmoid(s, T, o), nn.MaxPool2d(2, 1),
            nn.Conv2d(c1, c2, 4, 2), TemperedSigmoid(s, T, o), nn.MaxPool2d(2, 1), nn.Flatten(),
        )
        with torch.no_grad():
            flat = self.features(torch.zeros(1, in_channels, image_size, image_size)).shape[1]
        self.head = nn.Sequential(nn.Linear(flat, h), TemperedSigmoid(s, T, o), nn.Linear(h, num_classes))

    def forward(self, x):
        return self.head(self.features(x))


def to_group_norm(model: nn.Module) -> nn.Module:
    """``model`` (in place) with every BatchNorm replaced by GroupNorm(gcd(32, C), C) with the same affinity: the
    conversion Opacus' ``ModuleValidator.fix`` makes (:func:`dirdp.baselines.dpsgd.make_compatible`), without
    needing Opacus. A model without BatchNorm (the Papernot CNN) comes back as it was."""
    for name, child in model.named_children():
        if isinstance(child, nn.modules.batchnorm._BatchNorm):
            setattr(model, name, nn.GroupNorm(math.gcd(32, child.num_features), child.num_features,
                                              affine=child.affine))
        else:
            to_group_norm(child)
    return model


def norm_of(model: nn.Module) -> str:
    """What normalises ``model``'s activations: "batch" (any BatchNorm), "group" (GroupNorm), or "none"."""
    kinds = {type(m) for m in model.modules()}
    if any(issubclass(k, nn.modules.batchnorm._BatchNorm) for k in kinds):
        return "batch"
    return "group" if nn.GroupNorm in kinds else "none"


MODELS = {"inception": SmallInception, "resnet18": ResNet18, "resnet9": ResNet9, "papernot_cnn": PapernotCNN}


def add_conv_biases(model: nn.Module) -> nn.Module:
    """``model`` (in place) with a bias on every ``nn.Conv2d`` that has none, drawn as the paper's footnote 2 says:
    uniform on (-1/sqrt(k), 1/sqrt(k)), k = in_channels / groups * kernel area the inputs per output neuron, which
    is PyTorch's own default for a convolution's bias. The biases are drawn from the global generator in module
    order (``model.modules()``) after the model is built, so the weights (and every other parameter) are bit for
    bit those of the bias-free model of the same seed; only the generator's later state differs. A convolution that
    already has a bias (the Papernot CNN's) keeps it and draws nothing."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d) and m.bias is None:
            fan_in = (m.in_channels // m.groups) * math.prod(m.kernel_size)
            bound = 1.0 / math.sqrt(fan_in)
            bias = torch.empty(m.out_channels, dtype=m.weight.dtype, device=m.weight.device)
            with torch.no_grad():
                bias.uniform_(-bound, bound)
            m.bias = nn.Parameter(bias)  # registered where Conv2d keeps its (None) bias: right after the weight
    return model


def build_model(name: str, *, num_classes: int, in_channels: int, width: float = 1.0,
                image_size: int | None = None, norm: str = "batch", conv_bias: bool = False) -> nn.Module:
    """The model called ``name`` (one of :data:`MODELS`) with default PyTorch initialisation.
    ``image_size`` matters only for the Papernot CNN (its flattened size; default 28); ``norm`` = "group"
    replaces every BatchNorm by GroupNorm (:func:`to_group_norm`); ``conv_bias``: a bias on every convolution
    (the paper's footnote 2), drawn after the model is built, so its weights are the bias-free model's of the same
    seed (:func:`add_conv_biases`)."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {', '.join(NORMS)}. Found norm={norm!r}.")
    try:
        cls = MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}. Known: {', '.join(MODELS)}.") from None
    if not width > 0:
        raise ValueError(f"width must be > 0. Found width={width}.")
    extra = {"image_size": image_size} if (cls is PapernotCNN and image_size) else {}
    net = cls(num_classes=num_classes, in_channels=in_channels, width=width, **extra)
    if norm == "group":
        net = to_group_norm(net)  # draws nothing: GroupNorm starts at (1, 0)
    return add_conv_biases(net) if conv_bias else net
