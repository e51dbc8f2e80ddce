"""Data sets of Section 4.1.1 / Appendix D.1, loaded whole into tensors on the training device.

MNIST and FashionMNIST are read from torchvision's on-disk layout (``<root>/MNIST/raw``: the
gzip-compressed or plain IDX files); CIFAR-10 and SVHN through ``torchvision.datasets``; DermaMNIST
(28x28, train/val/test) through ``medmnist``. The data root is ``--data-root``, else
``$DIRDP_DATA``, else ``./data``. A data set missing there is downloaded by the real downloaders (with
their progress bars) where that can work: the root can be written and the download's host answers. Where
it cannot, nothing is tried and nothing created: a :class:`DatasetMissingError` says in one line which
root was searched, what sets it and the command that fetches the data.

Normalisation uses fixed per-channel constants: the usual published ones, which are the mean and std
of each data set's own training split (public numbers, but derived from the training data; none is
computed at run time). CIFAR-10 augmentation (Section 4.1.2: random crop with 4-pixel zero padding and
horizontal flip) runs batched on tensors with the training generator.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dirdp.data_fetch import ROOT_RULE, _host, _root_origin, why_no_download
from dirdp.idx import DatasetCorruptError, _find_idx, read_idx


class DatasetMissingError(FileNotFoundError):
    """A data set is not on disk and could not be downloaded. ``why``: the reason it was not (one line)."""

    def __init__(self, message: str, why: str = ""):
        super().__init__(message)
        self.why = why

    def __str__(self) -> str:
        return self.args[0]


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
    source: str = ""  # where its downloader fetches from (its host is asked before a download is tried)


_MNIST_FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")

SPECS: dict[str, DatasetSpec] = {
    "mnist": DatasetSpec("mnist", 1, 28, 10, (0.1307,), (0.3081,), ("train", "test"),
                         tuple(f"MNIST/raw/{f}" for f in _MNIST_FILES),
                         "python -c \"import torchvision; torchvision.datasets.MNIST('<root>', download=True)\"",
                         "https://ossci-datasets.s3.amazonaws.com/mnist/"),
    "fashionmnist": DatasetSpec("fashionmnist", 1, 28, 10, (0.2860,), (0.3530,), ("train", "test"),
                                tuple(f"FashionMNIST/raw/{f}" for f in _MNIST_FILES),
                                "python -c \"import torchvision; torchvision.datasets.FashionMNIST('<root>', download=True)\"",
                                "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"),
    "cifar10": DatasetSpec("cifar10", 3, 32, 10, (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616), ("train", "test"),
                           tuple(f"cifar-10-batches-py/{f}" for f in
                                 ["data_batch_1", "data_batch_2", "data_batch_3", "data_batch_4", "data_batch_5",
                                  "test_batch"]),
                           "python -c \"import torchvision; torchvision.datasets.CIFAR10('<root>', download=True)\"",
                           "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"),
    "svhn": DatasetSpec("svhn", 3, 32, 10, (0.4377, 0.4438, 0.4728), (0.1980, 0.2010, 0.1970), ("train", "test"),
                        ("SVHN/train_32x32.mat", "SVHN/test_32x32.mat"),
                        "python -c \"import torchvision as t; [t.datasets.SVHN('<root>/SVHN', split=s, download=True) "
                        "for s in ('train', 'test')]\"", "http://ufldl.stanford.edu/housenumbers/"),
    "dermamnist": DatasetSpec("dermamnist", 3, 28, 7, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5), ("train", "val", "test"),
                              ("medmnist/dermamnist.npz",),
                              "python -c \"import os, medmnist; os.makedirs('<root>/medmnist', exist_ok=True); "
                              "medmnist.DermaMNIST('train', root='<root>/medmnist', download=True)\"",  # needs its root
                              "https://zenodo.org/"),
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


def _missing(spec: DatasetSpec, root: Path, why: str | BaseException | None, origin: str = "") -> DatasetMissingError:
    """The one-line error of a data set that is not on disk: the root searched (and what chose it), what is missing,
    why it was not downloaded (``why``: a reason, the download's exception, None: downloads off) and the command
    that fetches it."""
    absent = [p.relative_to(root).as_posix() for p in missing_files(spec.name, root)]
    if absent:
        what = absent[0] + (f" and {len(absent) - 1} more file{'s' * (len(absent) > 2)}" if len(absent) > 1 else "")
        what = f"{what} missing"
    else:  # every file there, but the loader refused them (a checksum)
        what = f"{', '.join(spec.files)} there but refused by the loader"
    if isinstance(why, BaseException):
        why = f"the download failed: {type(why).__name__}: {' '.join(str(why).split())}"
    elif why is None:
        why = "downloads are off here"
    where = f"{root.resolve()}{'' if root.is_dir() else ', which does not exist'}"
    origin = f"; here: {origin}" if origin else ""
    return DatasetMissingError(
        f"{spec.name} is not under the data root {where} ({what}; the root is {ROOT_RULE}{origin}) and was not "
        f"downloaded ({why}). Fetch it with: {spec.fetch.replace('<root>', str(root))}", why)


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
            raise _missing(spec, root, cause or (None if not download else "the downloader left no files"))
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
    except RuntimeError as first:  # torchvision: a file is missing or fails its checksum
        if not download:
            raise _missing(spec, root, None) from first
        try:
            where.mkdir(parents=True, exist_ok=True)
            ds = cls(str(where), download=True, **kwargs)
        except Exception as err:  # noqa: BLE001
            if all((root / f).exists() for f in spec.files):  # every file there: one of them is damaged
                raise DatasetCorruptError(where, f"its {spec.name} files fail their checksums ({first}), and the "
                                                 f"download that would replace them failed ({type(err).__name__}: "
                                                 f"{err})") from None
            raise _missing(spec, root, err) from err
    except Exception as err:  # noqa: BLE001 - the files are there but cannot be read (truncated pickle or .mat)
        raise DatasetCorruptError(where, f"its {spec.name} files cannot be read "
                                         f"({type(err).__name__}: {err})") from None
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
        if not fetch:  # the file was there: it cannot be read
            raise DatasetCorruptError(where / "dermamnist.npz", f"it cannot be read as a DermaMNIST .npz "
                                                                f"({type(err).__name__}: {err})") from None
        raise _missing(spec, root, err) from err
    return np.asarray(ds.imgs).transpose(0, 3, 1, 2), np.asarray(ds.labels).reshape(-1)


@contextmanager
def _remove_new_empty_folders(spec: DatasetSpec, root: Path):
    """If the body fails, remove again the folders on the way to the data set's files (the data root and
    its parents included) that did not exist before and are still empty: a failed download leaves no
    empty ``<root>/MNIST/raw`` behind, and a mistyped ``--data-root`` creates nothing."""
    wanted = {(root / rel).parent for rel in spec.files}
    new = set()
    for folder in wanted:
        for p in (folder, *folder.parents):
            if p.exists():
                break
            new.add(p)
    try:
        yield
    except BaseException:
        for p in sorted(new, key=lambda p: len(p.parts), reverse=True):  # deepest first
            try:
                if p.is_dir() and not any(p.iterdir()):
                    p.rmdir()
            except OSError:
                pass
        raise


def load(name: str, split: str, *, root: str | os.PathLike | None = None, download: bool = True,
         verify: bool = True) -> Split:
    """Split ``split`` of data set ``name``, normalised, as CPU tensors.

    ``download``: fetch missing files with the real downloader (needs network). ``verify``: check
    the md5 sums torchvision knows for CIFAR-10 / SVHN (switch off only for test fixtures).
    """
    spec = get_spec(name)
    if split not in spec.splits:
        raise ValueError(f"{spec.name} has splits {spec.splits}. Found split={split!r}.")
    origin = _root_origin(root)
    root = data_root(root)
    if download and missing_files(spec.name, root):
        why = why_no_download(spec, root)
        if why is not None:  # refused at once: no downloader's retries, no folder made
            raise _missing(spec, root, why, origin)
        print(f"{spec.name} is not under the data root {root.resolve()}: downloading it from {_host(spec.source)[0]}",
              file=sys.stderr, flush=True)
    try:
        with _remove_new_empty_folders(spec, root):
            if spec.name in ("mnist", "fashionmnist"):
                images, labels = _load_mnist_like(spec, root, split, download)
            elif spec.name in ("cifar10", "svhn"):
                images, labels = _load_torchvision(spec, root, split, download, verify)
            else:
                images, labels = _load_medmnist(spec, root, split, download)
    except DatasetMissingError as err:
        raise _missing(spec, root, err.why, origin) from None
    import torch

    x = torch.from_numpy(np.array(images, dtype=np.uint8)).float().div_(255.0)
    if x.shape[1:] != (spec.channels, spec.size, spec.size):
        raise ValueError(f"{spec.name} {split}: expected images of shape {(spec.channels, spec.size, spec.size)}, "
                         f"found {tuple(x.shape[1:])}.")
    mean = torch.tensor(spec.mean).view(1, -1, 1, 1)
    std = torch.tensor(spec.std).view(1, -1, 1, 1)
    y = torch.from_numpy(np.asarray(labels, dtype=np.int64).copy())
    return Split((x - mean) / std, y)


def __getattr__(name: str):
    # torch is imported where a split is loaded, not with this module: the Snakefile reads the data specs and the
    # file lists of every profile at each start (test: tests/test_data.py), and torch's import is seconds of it
    if name == "random_crop_flip":  # Section 4.1.2's CIFAR-10 augmentation, as dirdp.data offered it
        from dirdp.augment import random_crop_flip
        return random_crop_flip
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
