"""MNIST from the standard IDX files, a synthetic stand-in, and the batch schedule.

Where the data comes from, first match wins:
1. an explicit folder (`--data PATH`),
2. the folder in the environment variable `GCBENCH_MNIST`,
3. the user cache, `$XDG_CACHE_HOME/gcbench/mnist` (default `~/.cache/gcbench/mnist`),
   which `gcbench data download` fills with checksummed files.
If none of these holds the training files, a deterministic synthetic MNIST-shaped set is
used, and every result and report says `data: synthetic`.
"""

from __future__ import annotations

import dataclasses
import gzip
import math
import os
import pathlib
import tempfile
import urllib.request
import zlib

import numpy as np

from ..core.errors import UsageError
from ..core.paths import user_cache
from .workloads import BATCH_SIZE, IMAGE_SHAPE, NUM_CLASSES

ENV_VAR = "GCBENCH_MNIST"
IMAGES = "train-images-idx3-ubyte"
LABELS = "train-labels-idx1-ubyte"
# SHA-256 of the gzipped training files as published (60,000 images and labels).
CHECKSUMS = {
    IMAGES + ".gz": "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
    LABELS + ".gz": "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
}
MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)
SYNTHETIC_SAMPLES = 12_000

_IDX_DTYPES: dict[int, str] = {0x08: "u1", 0x09: "i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


@dataclasses.dataclass(frozen=True)
class Dataset:
    """Training images as float32 in [0, 1], NHWC, and int32 labels."""

    images: np.ndarray  # (n, 28, 28, 1) float32
    labels: np.ndarray  # (n,) int32
    kind: str  # "real" or "synthetic"
    source: str  # folder of the IDX files, or how the synthetic set was made

    def __len__(self) -> int:
        return len(self.labels)

    def describe(self) -> dict:
        return {"kind": self.kind, "source": self.source, "samples": len(self)}


MAX_IDX_BYTES = 2**30  # the largest IDX payload read (MNIST's training images are 47 MB)


def read_idx(path: str | os.PathLike, expect_ndim: int | None = None) -> np.ndarray:
    """Read one IDX file (gzipped or not) into an array, checking its header.

    The file is streamed: the header says how many bytes follow, and no more than that
    (at most MAX_IDX_BYTES) is ever decompressed, so a gzip bomb costs nothing. Raises
    `UsageError` naming the file when the magic number, the number of dimensions or the
    size of the payload is not what the header promises.
    """
    path = pathlib.Path(path)
    gzipped = False
    try:
        with open(path, "rb") as f:
            gzipped = f.read(2) == b"\x1f\x8b"
        with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as f:
            return _read_idx_stream(f, path, expect_ndim)
    except OSError as e:  # gzip.BadGzipFile is an OSError too
        if gzipped and e.errno is None:
            raise UsageError(f"{path}: corrupt gzip data ({e})") from None
        raise UsageError(f"cannot read IDX file {path}: {e.strerror or e}") from None
    except (EOFError, zlib.error) as e:
        raise UsageError(f"{path}: corrupt gzip data ({e})") from None


def _read_idx_stream(f, path: pathlib.Path, expect_ndim: int | None) -> np.ndarray:
    """An IDX file's array, its header checked (`_idx_header`), its payload exactly as long
    as the header promises (and under MAX_IDX_BYTES)."""
    dtype, shape = _idx_header(f, path, expect_ndim)
    size = math.prod(shape) * dtype.itemsize  # exact: no overflow to 0
    if size > MAX_IDX_BYTES:
        raise UsageError(f"{path}: IDX header promises {size:,} bytes for shape {shape}, over the "
                         f"{MAX_IDX_BYTES:,} gcbench reads")
    payload = f.read(size)
    trailing = f.read(1)
    if len(payload) != size or trailing:
        got = f"{len(payload)}" if not trailing else f"more than {size}"
        raise UsageError(
            f"{path}: IDX payload is {got} bytes, expected {size} for shape {shape} "
            f"({'trailing bytes' if trailing else 'truncated'})"
        )
    return np.frombuffer(payload, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


def _idx_header(f, path: pathlib.Path, expect_ndim: int | None) -> tuple[np.dtype, tuple[int, ...]]:
    """An IDX header's element type and shape: its magic bytes, then one size per dimension."""
    magic = f.read(4)
    if len(magic) < 4 or magic[0] != 0 or magic[1] != 0 or magic[2] not in _IDX_DTYPES:
        raise UsageError(
            f"{path}: not an IDX file (magic bytes {magic.hex() or 'missing'}, "
            "expected 0000 then a type code and a dimension count, e.g. 00000803)"
        )
    dtype = np.dtype(_IDX_DTYPES[magic[2]])
    ndim = magic[3]
    if expect_ndim is not None and ndim != expect_ndim:
        raise UsageError(f"{path}: IDX file has {ndim} dimensions, expected {expect_ndim}")
    dims = f.read(4 * ndim)
    if len(dims) < 4 * ndim:
        raise UsageError(f"{path}: truncated IDX header ({4 + len(dims)} bytes, expected {4 + 4 * ndim})")
    return dtype, tuple(int.from_bytes(dims[4 * i: 4 * i + 4], "big") for i in range(ndim))


def write_idx(path: str | os.PathLike, array: np.ndarray, compress: bool = False) -> None:
    """Write `array` as an IDX file (the inverse of `read_idx`)."""
    codes = {np.dtype(v).newbyteorder("="): k for k, v in _IDX_DTYPES.items()}
    dtype = array.dtype.newbyteorder("=")
    if dtype not in codes:
        raise ValueError(f"IDX cannot store dtype {array.dtype}")
    big = array.astype(np.dtype(_IDX_DTYPES[codes[dtype]]))
    payload = bytes([0, 0, codes[dtype], array.ndim])
    payload += b"".join(int(n).to_bytes(4, "big") for n in array.shape) + big.tobytes()
    pathlib.Path(path).write_bytes(gzip.compress(payload) if compress else payload)


def cache_dir() -> pathlib.Path:
    return user_cache("mnist")


def _find(folder: pathlib.Path, stem: str) -> pathlib.Path | None:
    # Both the published names and the dotted names some mirrors use are accepted.
    for name in (stem, stem + ".gz", stem.replace("-idx", ".idx"), stem.replace("-idx", ".idx") + ".gz"):
        if (folder / name).is_file():
            return folder / name
    return None


def locate(path: str | os.PathLike | None = None) -> pathlib.Path | None:
    """The folder that holds the MNIST training files, or None when there is none.

    An explicit `path` (or `$GCBENCH_MNIST`) that does not hold them is an error: the
    user asked for real data and must not silently get synthetic data.
    """
    explicit = path if path is not None else os.environ.get(ENV_VAR) or None
    if explicit is not None:
        folder = pathlib.Path(explicit).expanduser()
        origin = "--data" if path is not None else f"${ENV_VAR}"
        if not folder.is_dir():
            raise UsageError(f"{origin} {folder}: no such folder")
        if _find(folder, IMAGES) is None or _find(folder, LABELS) is None:
            raise UsageError(f"{origin} {folder}: expected {IMAGES}[.gz] and {LABELS}[.gz] there")
        return folder
    folder = cache_dir()
    if _find(folder, IMAGES) and _find(folder, LABELS):
        return folder
    return None


def load_mnist(folder: pathlib.Path) -> Dataset:
    found = _find(folder, IMAGES), _find(folder, LABELS)
    if found[0] is None or found[1] is None:
        raise UsageError(f"{folder}: expected {IMAGES}[.gz] and {LABELS}[.gz] there")
    images = read_idx(found[0], expect_ndim=3)
    labels = read_idx(found[1], expect_ndim=1)
    if images.shape[1:] != IMAGE_SHAPE[:2]:
        raise UsageError(f"{folder}: images are {images.shape[1:]}, expected {IMAGE_SHAPE[:2]}")
    if len(images) != len(labels):
        raise UsageError(f"{folder}: {len(images)} images but {len(labels)} labels")
    if labels.dtype.kind not in "iu":
        raise UsageError(f"{folder}: labels are {labels.dtype} numbers; MNIST labels are integers 0..{NUM_CLASSES - 1}")
    if len(labels) and (labels.min() < 0 or labels.max() >= NUM_CLASSES):
        raise UsageError(f"{folder}: labels outside 0..{NUM_CLASSES - 1}")
    if len(labels) < BATCH_SIZE:
        raise UsageError(f"{folder}: {len(labels)} samples, fewer than one batch of {BATCH_SIZE}")
    x = (images.astype(np.float32) / 255.0)[..., None]
    return Dataset(x, labels.astype(np.int32), "real", str(folder))


def synthetic(samples: int = SYNTHETIC_SAMPLES, seed: int = 0) -> Dataset:
    """A deterministic, learnable MNIST-shaped set: ten blurred class prototypes plus noise."""
    rng = np.random.default_rng([seed, 0x6D6E6973])
    protos = (rng.random((NUM_CLASSES, 28, 28)) < 0.25).astype(np.float32)
    for axis in (1, 2):  # a little smoothing so the classes are shapes, not salt
        protos = (protos + np.roll(protos, 1, axis) + np.roll(protos, -1, axis)) / 3.0
    labels = rng.integers(0, NUM_CLASSES, samples).astype(np.int32)
    noise = rng.random((samples, 28, 28), dtype=np.float32)
    images = np.clip(0.7 * protos[labels] + 0.3 * noise, 0.0, 1.0).astype(np.float32)
    return Dataset(images[..., None], labels, "synthetic", f"gcbench synthetic, seed {seed}, {samples} samples")


def load(path: str | os.PathLike | None = None, seed: int = 0) -> Dataset:
    """Real MNIST when it can be found (see the module docstring), else synthetic."""
    folder = locate(path)
    return load_mnist(folder) if folder is not None else synthetic(seed=seed)


def batch_schedule(samples: int, steps: int, seed: int, batch: int = BATCH_SIZE) -> np.ndarray:
    """Indices of every step's batch, shape (steps, batch), int32.

    Epochs are seeded permutations cut into whole batches (the remainder of each epoch
    is dropped), so every backend given the same arguments sees the same batches. The
    result is allocated once; only one epoch's permutation exists besides it.
    """
    if samples < batch:
        raise UsageError(f"{samples} samples is fewer than one batch of {batch}")
    per_epoch = samples // batch
    rng = np.random.default_rng([seed, 0x5C4E])
    out = np.empty((steps, batch), np.int32)
    for start in range(0, steps, per_epoch):
        rows = min(per_epoch, steps - start)
        perm = rng.permutation(samples)[: per_epoch * batch].reshape(per_epoch, batch)
        out[start: start + rows] = perm[:rows]
    return out


def download(folder: pathlib.Path | None = None, quiet: bool = False) -> pathlib.Path:
    """Download the MNIST training files into `folder` (the cache by default), checking SHA-256."""
    from ..core.files import make_folder, sha256

    folder = make_folder(pathlib.Path(folder) if folder is not None else cache_dir(), "MNIST folder")
    for name, digest in CHECKSUMS.items():
        target = folder / name
        if target.is_file() and sha256(target) == digest:
            continue
        errors = []
        for mirror in MIRRORS:
            try:
                _fetch(mirror + name, target, digest, quiet)
                break
            except (OSError, ValueError) as e:
                errors.append(f"{mirror}: {e}")
        else:
            raise UsageError(f"could not download {name}: " + "; ".join(errors))
    return folder


def _fetch(url: str, target: pathlib.Path, digest: str, quiet: bool) -> None:
    from tqdm import tqdm

    from ..core.files import FILE_MODE, sha256

    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=target.name, suffix=".part")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - https mirrors only
            total = int(response.headers.get("Content-Length") or 0) or None
            with tqdm(total=total, unit="B", unit_scale=True, desc=target.name, disable=quiet) as bar:
                while chunk := response.read(1 << 16):
                    out.write(chunk)
                    bar.update(len(chunk))
        if sha256(tmp) != digest:
            raise ValueError("checksum mismatch")
        pathlib.Path(tmp).chmod(FILE_MODE)
        pathlib.Path(tmp).replace(target)
    finally:
        if pathlib.Path(tmp).exists():
            pathlib.Path(tmp).unlink()
