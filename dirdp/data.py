"""Data sets of Section 4.1.1 / Appendix D.1, loaded whole into tensors on the training device.

MNIST and FashionMNIST are read from torchvision's on-disk layout (``<root>/MNIST/raw``: the
gzip-compressed or plain IDX files); CIFAR-10 and SVHN through ``torchvision.datasets``; DermaMNIST
(28x28, train/val/test) through ``medmnist``. The data root is ``--data-root``, else
``$DIRDP_DATA``, else ``./data``. With network access the real downloaders fetch what is missing;
without, a :class:`DatasetMissingError` names the files expected, where to put them and how to
fetch them.

Normalisation uses fixed, public per-channel constants (never statistics of the private
training set). CIFAR-10 augmentation (Section 4.1.2: random crop with 4-pixel zero padding and
horizontal flip) runs batched on tensors with the training generator.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch


class DatasetMissingError(FileNotFoundError):
    """A data set is not on disk and could not be downloaded."""


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    channels: int
    size: int
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    splits: tuple[str, ...]
    files: tuple[str, ...]  # relative to the data root
    fetch: str  # how to get the files by hand


_MNIST_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")

SPECS: dict[str, DatasetSpec] = {
    "mnist": DatasetSpec("mnist", 1, 28, 10, (0.1307,), (0.3081,), ("train", "test"),
                         tuple(f"MNIST/raw/{f}" for f in _MNIST_FILES),
                         "python -c \"import torchvision; torchvision.datasets.MNIST('<root>', download=True)\""),
    "fashionmnist": DatasetSpec("fashionmnist", 1, 28, 10, (0.2860,), (0.3530,), ("train", "test"),
                                tuple(f"FashionMNIST/raw/{f}" for f in _MNIST_FILES),
                                "python -c \"import torchvision; torchvision.datasets.FashionMNIST('<root>', download=True)\""),
    "cifar10": DatasetSpec("cifar10", 3, 32, 10, (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616), ("train", "test"),
                           tuple(f"cifar-10-batches-py/{f}" for f in
                                 ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5",
                                  "test_batch"]),
                           "python -c \"import torchvision; torchvision.datasets.CIFAR10('<root>', download=True)\""),
    "svhn": DatasetSpec("svhn", 3, 32, 10, (0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970), ("train", "test"),
                        ("SVHN/train_32x32.mat", "SVHN/test_32x32.mat"),
                        "python -c \"import torchvision as t; [t.datasets.SVHN('<root>/SVHN', split=s, download=True) "
                        "for s in ('train', 'test')]\""),
    "dermamnist": DatasetSpec("dermamnist", 3, 28, 7, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5), ("train", "val", "test"),
                              ("medmnist/dermamnist.npz",),
                              "python -c \"import medmnist; medmnist.DermaMNIST('train', root='<root>/medmnist', "
                              "download=True)\""),
}


@dataclass
class Split:
    """A whole split as tensors: x [N, C, H, W] float32 (normalised), y [N] int64."""

    x: torch.Tensor
    y: torch.Tensor

    def to(self, device) -> "Split":
        return Split(self.x.to(device), self.y.to(device))

    def __len__(self) -> int:
        return len(self.y)


def data_root(root: str | os.PathLike | None = None) -> Path:
    """``root`` if given, else ``$DIRDP_DATA``, else ``./data``."""
    return Path(root or os.environ.get("DIRDP_DATA") or "data")


def get_spec(name: str) -> DatasetSpec:
    try:
        return SPECS[name.lower()]
    except KeyError:
        raise KeyError(f"unknown data set {name!r}. Known: {', '.join(SPECS)}.") from None


def _missing(spec: DatasetSpec, root: Path, cause: BaseException | None) -> DatasetMissingError:
    files = "\n".join(f"  {root / f}" for f in spec.files)
    why = f"\nThe download failed with: {type(cause).__name__}: {cause}" if cause else ""
    return DatasetMissingError(
        f"{spec.name} is not under the data root {root.resolve()} and could not be downloaded.{why}\n"
        f"Expected files:\n{files}\n"
        f"Put them there (or point --data-root / $DIRDP_DATA at a folder that has them), or fetch them on a "
        f"machine with network access:\n  {spec.fetch.replace('<root>', str(root))}"
    )


def missing_files(name: str, root: str | os.PathLike | None = None) -> list[Path]:
    """The files of data set ``name`` that are not under the data root (an IDX file counts as
    present gzip-compressed or not). Empty when the data set can be loaded offline."""
    spec = get_spec(name)
    root = data_root(root)
    missing = []
    for rel in spec.files:
        path = root / rel
        alternatives = (path, path.with_suffix("")) if path.suffix == ".gz" else (path,)
        if not any(p.exists() for p in alternatives):
            missing.append(path)
    return missing


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """An IDX file (LeCun's MNIST format), gzip-compressed or not, as a numpy array."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        data = fh.read()
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file (magic {data[:4].hex()}).")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _find_idx(root: Path, folder: str, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):
        path = root / folder / "raw" / name
        if path.exists():
            return path
    return None


def _load_mnist_like(spec: DatasetSpec, root: Path, split: str, download: bool) -> tuple[np.ndarray, np.ndarray]:
    folder = "MNIST" if spec.name == "mnist" else "FashionMNIST"
    prefix = "train" if split == "train" else "t10k"
    stems = (f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte")
    paths = [_find_idx(root, folder, s) for s in stems]
    if None in paths:
        cause = None
        if download:
            import torchvision

            try:
                getattr(torchvision.datasets, folder)(str(root), train=split == "train", download=True)
            except Exception as err:  # noqa: BLE001 - reported to the user below
                cause = err
        paths = [_find_idx(root, folder, s) for s in stems]
        if None in paths:
            raise _missing(spec, root, cause)
    return read_idx(paths[0])[:, None], read_idx(paths[1])


def _torchvision_class(cls, verify: bool):
    """``cls`` itself, or (verify=False) a subclass with its md5 sums set to None, so that its
    integrity checks only ask that the files exist: the sums are those of the full published
    files, and test fixtures are tiny files in the same format."""
    if verify:
        return cls
    attrs = {}
    for name in ("train_list", "test_list"):
        if hasattr(cls, name):
            attrs[name] = [[f, None] for f, _ in getattr(cls, name)]
    if hasattr(cls, "meta"):
        attrs["meta"] = {**cls.meta, "md5": None}
    if hasattr(cls, "split_list"):
        attrs["split_list"] = {k: [url, f, None] for k, (url, f, _) in cls.split_list.items()}
    return type(cls.__name__, (cls,), attrs)


def _load_torchvision(spec: DatasetSpec, root: Path, split: str, download: bool, verify: bool):
    import torchvision

    if spec.name == "cifar10":
        cls, kwargs, where = torchvision.datasets.CIFAR10, dict(train=split == "train"), root
    else:
        cls, kwargs, where = torchvision.datasets.SVHN, dict(split=split), root / "SVHN"
    cls = _torchvision_class(cls, verify)
    try:
        ds = cls(str(where), download=False, **kwargs)
    except RuntimeError as first:
        if not download:
            raise _missing(spec, root, None) from first
        try:
            where.mkdir(parents=True, exist_ok=True)
            ds = cls(str(where), download=True, **kwargs)
        except Exception as err:  # noqa: BLE001
            raise _missing(spec, root, err) from err
    if spec.name == "cifar10":
        return np.asarray(ds.data).transpose(0, 3, 1, 2), np.asarray(ds.targets)
    return np.asarray(ds.data), np.asarray(ds.labels)  # torchvision's SVHN is already [N, C, H, W], labels 0-9


def _load_medmnist(spec: DatasetSpec, root: Path, split: str, download: bool):
    import medmnist

    where = root / "medmnist"
    fetch = not (where / "dermamnist.npz").exists()
    if fetch and not download:
        raise _missing(spec, root, None)
    try:
        where.mkdir(parents=True, exist_ok=True)
        ds = medmnist.DermaMNIST(split=split, root=str(where), download=fetch)
    except Exception as err:  # noqa: BLE001 - reported to the user with the files expected
        raise _missing(spec, root, err) from err
    return np.asarray(ds.imgs).transpose(0, 3, 1, 2), np.asarray(ds.labels).reshape(-1)


def load(name: str, split: str, *, root: str | os.PathLike | None = None, download: bool = True,
         verify: bool = True) -> Split:
    """Split ``split`` of data set ``name``, normalised, as CPU tensors.

    ``download``: fetch missing files with the real downloader (needs network). ``verify``: check
    the md5 sums torchvision knows for CIFAR-10 / SVHN (switch off only for test fixtures).
    """
    spec = get_spec(name)
    if split not in spec.splits:
        raise ValueError(f"{spec.name} has splits {spec.splits}. Found split={split!r}.")
    root = data_root(root)
    if spec.name in ("mnist", "fashionmnist"):
        images, labels = _load_mnist_like(spec, root, split, download)
    elif spec.name in ("cifar10", "svhn"):
        images, labels = _load_torchvision(spec, root, split, download, verify)
    else:
        images, labels = _load_medmnist(spec, root, split, download)
    x = torch.from_numpy(np.array(images, dtype=np.uint8)).float().div_(255.0)
    if x.shape[1:] != (spec.channels, spec.size, spec.size):
        raise ValueError(f"{spec.name} {split}: expected images of shape {(spec.channels, spec.size, spec.size)}, "
                         f"found {tuple(x.shape[1:])}.")
    mean = torch.tensor(spec.mean).view(1, -1, 1, 1)
    std = torch.tensor(spec.std).view(1, -1, 1, 1)
    y = torch.from_numpy(np.asarray(labels, dtype=np.int64).copy())
    return Split((x - mean) / std, y)


def random_crop_flip(x: torch.Tensor, generator: torch.Generator, padding: int = 4) -> torch.Tensor:
    """CIFAR-10 augmentation of Section 4.1.2 on a whole batch: zero-pad by ``padding``, crop
    back to H x W at a random offset per image, flip each image horizontally with probability 1/2."""
    b, _, h, w = x.shape
    dev = x.device
    padded = torch.nn.functional.pad(x, (padding,) * 4)
    oy = torch.randint(0, 2 * padding + 1, (b,), device=dev, generator=generator)
    ox = torch.randint(0, 2 * padding + 1, (b,), device=dev, generator=generator)
    flip = torch.rand(b, device=dev, generator=generator) < 0.5
    rows = (oy[:, None] + torch.arange(h, device=dev))[:, None, :, None]
    cols = torch.arange(w, device=dev).expand(b, w)
    cols = torch.where(flip[:, None], cols.flip(1), cols) + ox[:, None]
    bidx = torch.arange(b, device=dev)[:, None, None, None]
    cidx = torch.arange(x.shape[1], device=dev)[None, :, None, None]
    return padded[bidx, cidx, rows, cols[:, None, None, :]]
