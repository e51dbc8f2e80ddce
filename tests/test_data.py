"""Data sets: the offline mirror, tiny files in every real on-disk format, errors, augmentation."""

from pathlib import Path

import numpy as np
import pytest
import torch

from dirdp import data
from dirdp.training import make_config, train

from conftest import write_idx


def test_mnist_mirror_loads_offline_with_the_published_label_counts(mirror_root):
    train_split = data.load("mnist", "train", root=mirror_root, download=False)
    assert train_split.x.shape == (60_000, 1, 28, 28) and train_split.x.dtype == torch.float32
    counts = torch.bincount(train_split.y).tolist()
    assert counts == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert abs(train_split.x.mean().item()) < 0.01 and abs(train_split.x.std().item() - 1) < 0.01  # normalised
    fashion = data.load("fashionmnist", "test", root=mirror_root, download=False)
    assert fashion.x.shape == (10_000, 1, 28, 28) and torch.bincount(fashion.y).tolist() == [1000] * 10


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_read_idx_agrees_with_torchvision(tmp_path, suffix):
    from torchvision.datasets.mnist import read_image_file

    images = np.random.default_rng(1).integers(0, 256, (5, 28, 28))
    write_idx(tmp_path / "plain", images)
    write_idx(tmp_path / f"x{suffix}", images)
    np.testing.assert_array_equal(data.read_idx(tmp_path / f"x{suffix}"), read_image_file(str(tmp_path / "plain")).numpy())


@pytest.mark.parametrize("name,splits,shape", [
    ("mnist", {"train": 64, "test": 32}, (1, 28, 28)),
    ("fashionmnist", {"train": 64, "test": 32}, (1, 28, 28)),
    ("cifar10", {"train": 80, "test": 20}, (3, 32, 32)),
    ("svhn", {"train": 40, "test": 20}, (3, 32, 32)),
    ("dermamnist", {"train": 35, "val": 14, "test": 21}, (3, 28, 28)),
])
def test_tiny_files_load_through_the_real_loaders(tiny_root, name, splits, shape):
    for split, n in splits.items():
        s = data.load(name, split, root=tiny_root, download=False, verify=False)
        assert s.x.shape == (n, *shape) and s.y.shape == (n,)
        assert s.y.min() >= 0 and s.y.max() < data.get_spec(name).num_classes
    if name == "svhn":  # label 10 is digit 0
        assert data.load("svhn", "train", root=tiny_root, download=False, verify=False).y[:10].tolist() == \
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]


def test_checksums_are_verified_by_default(tiny_root):
    with pytest.raises(data.DatasetMissingError, match="cifar-10-batches-py/data_batch_1"):
        data.load("cifar10", "train", root=tiny_root, download=False)


@pytest.mark.parametrize("name", list(data.SPECS))
def test_missing_data_set_names_files_place_and_fetch_command(tmp_path, name):
    with pytest.raises(data.DatasetMissingError) as err:
        data.load(name, "train", root=tmp_path, download=False)
    msg = str(err.value)
    spec = data.get_spec(name)
    assert "\n" not in msg and f"the data root {tmp_path} (" in msg and f"{spec.files[0]} " in msg, msg
    assert "--data-root, else $DIRDP_DATA, else ./data" in msg and "download=True" in msg


def test_bad_split_and_name():
    with pytest.raises(ValueError, match="Found split='val'"):
        data.load("mnist", "val")
    with pytest.raises(KeyError, match="Known"):
        data.get_spec("imagenet")


def test_random_crop_flip_matches_a_per_image_reference():
    x = torch.arange(2 * 3 * 32 * 32, dtype=torch.float32).reshape(2, 3, 32, 32)
    x = x.repeat(8, 1, 1, 1)
    out = data.random_crop_flip(x, torch.Generator().manual_seed(4))
    g = torch.Generator().manual_seed(4)  # replay the same draws
    oy = torch.randint(0, 9, (16,), generator=g)
    ox = torch.randint(0, 9, (16,), generator=g)
    flip = torch.rand(16, generator=g) < 0.5
    padded = torch.nn.functional.pad(x, (4, 4, 4, 4))
    for i in range(16):
        ref = padded[i, :, oy[i]:oy[i] + 32, ox[i]:ox[i] + 32]
        torch.testing.assert_close(out[i], ref.flip(2) if flip[i] else ref)
    assert flip.any() and not flip.all() and (oy != 4).any()


@pytest.mark.parametrize("name", ["mnist", "cifar10", "svhn", "dermamnist"])
def test_a_few_training_steps_on_each_tiny_data_set(tiny_root, tmp_path, name):
    splits = {s: data.load(name, s, root=tiny_root, download=False, verify=False) for s in data.get_spec(name).splits}
    cfg = make_config(name, 2.0, seed=0, steps=3, q=0.2, width=0.0625, eval_every=3, checkpoint_every=100)
    result = train(cfg, tmp_path / "r.json", data=splits, progress=False)
    assert result["steps"] == 3 and 0 <= result["test_accuracy"] <= 100 and result["rstar"] > 0
    assert (result["val_accuracy"] is not None) == (name == "dermamnist")


@pytest.mark.parametrize("damage,problem", [
    ("cut gzip", "not a complete gzip file"),
    ("cut idx", "its header promises 3920 bytes of data of shape (5, 28, 28), the file holds 1000"),
    ("empty", "not an unsigned-byte IDX file (magic missing)"),
    ("not idx", "not an unsigned-byte IDX file (magic 3c68746d)"),
    ("not gzip", "not a complete gzip file"),
])
def test_a_damaged_idx_file_is_named_with_what_to_do(tmp_path, damage, problem):
    images = np.random.default_rng(1).integers(0, 256, (5, 28, 28))
    path = tmp_path / ("x.gz" if "gzip" in damage else "x")
    write_idx(path, images)
    raw = path.read_bytes()
    path.write_bytes({"cut gzip": raw[:100], "cut idx": raw[:16 + 1000], "empty": b"", "not idx": b"<html>...",
                      "not gzip": b"<html>..."}[damage])
    with pytest.raises(data.DatasetCorruptError) as err:
        data.read_idx(path)
    assert isinstance(err.value, ValueError) and err.value.path == path
    msg = str(err.value)
    assert msg.startswith(f"{path} is damaged: ") and problem in msg and "Delete it and download it again" in msg


def test_damaged_files_of_the_other_loaders_are_named(tiny_root, tmp_path):
    import shutil

    root = tmp_path / "root"
    shutil.copytree(tiny_root, root)
    (root / "medmnist" / "dermamnist.npz").write_bytes((root / "medmnist" / "dermamnist.npz").read_bytes()[:500])
    with pytest.raises(data.DatasetCorruptError, match="dermamnist.npz is damaged: it cannot be read"):
        data.load("dermamnist", "train", root=root, download=False)
    batch = root / "cifar-10-batches-py" / "data_batch_1"
    batch.write_bytes(batch.read_bytes()[:300])
    with pytest.raises(data.DatasetCorruptError, match="cifar10 files cannot be read"):
        data.load("cifar10", "train", root=root, download=False, verify=False)


def test_a_failed_load_creates_no_folders(tmp_path):
    root = tmp_path / "a" / "b"
    for name in data.SPECS:
        with pytest.raises(data.DatasetMissingError, match=f"the data root {root}, which does not exist"):
            data.load(name, "train", root=root, download=False)
    assert not (tmp_path / "a").exists()


def test_what_the_snakefile_imports_leaves_torch_out():
    """Every Snakemake start reads the data specs and file lists (workflow.experiments, workflow.report): without torch,
    whose import is seconds of each start; a split still loads, and dirdp.data.random_crop_flip is still there."""
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys\n"
            "import workflow.experiments, workflow.report, workflow.profile_schema\n"
            "print('torch' in sys.modules)\n"
            "from dirdp import data\n"
            "assert data.get_spec('cifar10').channels == 3 and callable(data.random_crop_flip)\n"
            "print('torch' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]  # random_crop_flip brings torch, on first use
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        data.nothing  # noqa: B018


def test_a_download_is_tried_only_where_it_can_work(tmp_path, monkeypatch):
    """No network (or a root that cannot be written): why_no_download says so in seconds, without a downloader's
    retries; where the host answers, it has no objection."""
    import socket

    spec = data.get_spec("mnist")

    def refuse(address, timeout=None):
        raise OSError(101, "Network is unreachable")

    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert data.why_no_download(spec, tmp_path / "new") == \
        "no network: ossci-datasets.s3.amazonaws.com cannot be reached: Network is unreachable"
    (tmp_path / "afile").write_text("")
    assert data.why_no_download(spec, tmp_path / "afile" / "data") == f"{tmp_path / 'afile'} cannot be written"

    class Answered:
        def close(self):
            pass

    monkeypatch.setattr(socket, "create_connection", lambda address, timeout=None: Answered())
    assert data.why_no_download(spec, tmp_path / "new") is None


def test_a_missing_data_set_is_downloaded_where_that_works(tmp_path, monkeypatch, capsys):
    """The download path, with the downloader replaced by one that writes a tiny MNIST the way torchvision does."""
    import torchvision
    calls = []

    class FakeMNIST:
        def __init__(self, root, train=True, download=False):
            calls.append((root, train, download))
            raw = Path(root) / "MNIST" / "raw"
            for prefix, n in (("train", 64), ("t10k", 32)):
                write_idx(raw / f"{prefix}-images-idx3-ubyte.gz", np.zeros((n, 28, 28)))
                write_idx(raw / f"{prefix}-labels-idx1-ubyte.gz", np.arange(n) % 10)

    monkeypatch.setattr(torchvision.datasets, "MNIST", FakeMNIST)
    monkeypatch.setattr(data, "why_no_download", lambda spec, root: None)
    split = data.load("mnist", "train", root=tmp_path / "new")
    assert len(split) == 64 and calls == [(str(tmp_path / "new"), True, True)]
    assert "downloading it from ossci-datasets.s3.amazonaws.com" in capsys.readouterr().err
    data.load("mnist", "test", root=tmp_path / "new")  # on disk now: no second download
    assert len(calls) == 1
