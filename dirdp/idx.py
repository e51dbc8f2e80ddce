"""LeCun's IDX format (MNIST, FashionMNIST), gzip-compressed or not, read into numpy; a damaged file is one error
naming it (:class:`DatasetCorruptError`). Re-exported by :mod:`dirdp.data`."""

from __future__ import annotations

import gzip
import os
import zlib
from pathlib import Path

import numpy as np


class DatasetCorruptError(ValueError):
    """A data file is on disk but cannot be read (truncated, or not the format expected). Its message names
    the file and says to delete it and download or copy it again."""

    def __init__(self, path: str | os.PathLike, problem: str):
        super().__init__(f"{path} is damaged: {problem}. Delete it and download it again (or copy it again "
                         "from a complete copy of the data set).")
        self.path = Path(path)


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """An IDX file (LeCun's MNIST format), gzip-compressed or not, as a numpy array.

    A truncated or damaged file raises :class:`DatasetCorruptError` (a ValueError) naming it."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            data = fh.read()
    except (EOFError, zlib.error, gzip.BadGzipFile) as err:  # truncated download or copy, or not gzip at all
        raise DatasetCorruptError(path, f"it is not a complete gzip file ({type(err).__name__}: {err})") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise DatasetCorruptError(path, f"it is not an unsigned-byte IDX file (magic {data[:4].hex() or 'missing'})")
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DatasetCorruptError(path, f"its IDX header is cut short ({len(data)} bytes)")
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    want = int(np.prod(shape, dtype=np.int64))
    if len(data) - header != want:
        raise DatasetCorruptError(path, f"its header promises {want} bytes of data of shape {shape}, the file "
                                        f"holds {len(data) - header}")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def _find_idx(root: Path, folder: str, stem: str) -> Path | None:
    for name in (stem, stem + ".gz"):
        path = root / folder / "raw" / name
        if path.exists():
            return path
    return None
