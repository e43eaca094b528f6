import gzip

import numpy as np
import pytest

from conftest import write_mnist
from gcbench.core.errors import UsageError
from gcbench.measuring import mnist as datamod


@pytest.mark.parametrize("compress", [False, True])
def test_idx_roundtrip(tmp_path, compress):
    images, labels = write_mnist(tmp_path, samples=300, compress=compress)
    ds = datamod.load(tmp_path)
    assert ds.kind == "real"
    assert ds.images.shape == (300, 28, 28, 1)
    assert ds.images.dtype == np.float32
    np.testing.assert_array_equal(ds.labels, labels)
    np.testing.assert_allclose(ds.images[..., 0], images / 255.0, rtol=1e-6)


def test_idx_other_dtypes_roundtrip(tmp_path):
    arr = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 5
    datamod.write_idx(tmp_path / "a.idx", arr)
    np.testing.assert_array_equal(datamod.read_idx(tmp_path / "a.idx"), arr)


def test_truncated_idx_names_file_and_expectation(tmp_path):
    write_mnist(tmp_path, samples=200)
    path = tmp_path / datamod.IMAGES
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(UsageError) as e:
        datamod.load(tmp_path)
    assert str(path) in str(e.value)
    assert "truncated" in str(e.value)
    assert "expected" in str(e.value)


def test_wrong_magic_is_rejected(tmp_path):
    write_mnist(tmp_path, samples=200)
    path = tmp_path / datamod.LABELS
    path.write_bytes(b"\x12\x34\x56\x78" + path.read_bytes()[4:])
    with pytest.raises(UsageError, match=r"not an IDX file.*expected 0000"):
        datamod.load(tmp_path)


def test_labels_file_with_image_dimensions_is_rejected(tmp_path):
    write_mnist(tmp_path, samples=200)
    (tmp_path / datamod.LABELS).write_bytes((tmp_path / datamod.IMAGES).read_bytes())
    with pytest.raises(UsageError, match="3 dimensions, expected 1"):
        datamod.load(tmp_path)


def test_corrupt_gzip_is_rejected(tmp_path):
    write_mnist(tmp_path, samples=200, compress=True)
    path = tmp_path / (datamod.IMAGES + ".gz")
    path.write_bytes(gzip.compress(b"x" * 100)[:30])
    with pytest.raises(UsageError, match="gzip"):
        datamod.load(tmp_path)


def test_locate_order_env_then_cache(tmp_path, monkeypatch):
    assert datamod.locate() is None
    assert datamod.load().kind == "synthetic"
    cached = datamod.cache_dir()
    write_mnist(cached, samples=200)
    assert datamod.locate() == cached
    env = tmp_path / "env"
    write_mnist(env, samples=200)
    monkeypatch.setenv(datamod.ENV_VAR, str(env))
    assert datamod.locate() == env
    assert datamod.locate(cached) == cached  # an explicit path wins


def test_explicit_folder_without_files_is_an_error(tmp_path):
    with pytest.raises(UsageError, match="no such folder"):
        datamod.locate(tmp_path / "nope")
    with pytest.raises(UsageError, match="expected train-images-idx3-ubyte"):
        datamod.locate(tmp_path)


def test_synthetic_is_deterministic_and_learnable_shaped():
    a, b = datamod.synthetic(500, seed=3), datamod.synthetic(500, seed=3)
    np.testing.assert_array_equal(a.images, b.images)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.images, datamod.synthetic(500, seed=4).images)
    assert a.images.shape == (500, 28, 28, 1)
    assert 0 <= a.images.min()
    assert a.images.max() <= 1
    # Class means differ far more than the noise within a class: the set is learnable.
    means = np.stack([a.images[a.labels == c].mean(0) for c in range(10)])
    assert np.abs(means[0] - means[1]).mean() > 0.05
    assert a.kind == "synthetic"


def test_batch_schedule_is_seeded_permutation_epochs():
    s = datamod.batch_schedule(1000, 20, seed=7)
    assert s.shape == (20, 128)
    assert s.dtype == np.int32
    np.testing.assert_array_equal(s, datamod.batch_schedule(1000, 20, seed=7))
    assert not np.array_equal(s, datamod.batch_schedule(1000, 20, seed=8))
    per_epoch = 1000 // 128
    first_epoch = s[:per_epoch].ravel()
    assert len(set(first_epoch.tolist())) == per_epoch * 128  # no repeats within an epoch
    assert s.min() >= 0
    assert s.max() < 1000
    # A longer schedule starts with the shorter one, so warm-up + steps splits never shift batches.
    np.testing.assert_array_equal(datamod.batch_schedule(1000, 40, seed=7)[:20], s)


def test_download_verifies_checksums(tmp_path, monkeypatch):
    def fake_fetch(url, target, digest, quiet):
        target.write_bytes(b"not mnist")
        raise ValueError("checksum mismatch")

    monkeypatch.setattr(datamod, "_fetch", fake_fetch)
    with pytest.raises(UsageError, match=r"could not download.*checksum mismatch"):
        datamod.download(tmp_path, quiet=True)
