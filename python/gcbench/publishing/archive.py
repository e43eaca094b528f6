"""A published report carries its raw results: `results.tar.gz` in the report's folder.

The archive holds the results folder's documents (one JSON per repeat, `suite.json`
and the memory, bisect, explain and reproduction documents), flat, with fixed
timestamps and owners so the same results give the same bytes. `gcbench report` reads
an archive (or a report folder holding one) like a results folder, which is how a
published report is rebuilt from its own data.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import pathlib
import re
import shutil
import tarfile
import tempfile

from ..core import files
from ..core.errors import UsageError
from ..measuring import results

NAME = "results.tar.gz"
LIMIT_BYTES = 5 * 2**20  # what a published report may carry
MEMBER_LIMIT = files.DOCUMENT_LIMIT  # the largest document read from an archive, as from a folder
TOTAL_LIMIT = 2 * 2**30  # all of an archive's documents together
_MEMBER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=-]*\.json$")


def members(folder: pathlib.Path) -> list[pathlib.Path]:
    """The files of a results folder that belong in its archive."""
    return sorted(p for p in folder.glob("*.json") if _MEMBER.match(p.name) and p.is_file())


def pack(folder: pathlib.Path, target: pathlib.Path, replace: dict[str, bytes] | None = None) -> pathlib.Path:
    """Write the archive of results folder `folder` to `target` (atomically, reproducibly).
    `replace` holds documents, by name, that the archive carries instead of (or besides) the
    folder's: what a report was built from when that is not what the folder holds."""
    replace = replace or {}
    contents: dict[str, pathlib.Path | bytes] = {path.name: path for path in members(folder)}
    contents |= replace
    raw = io.BytesIO()
    # level 6 (gzip's own default): 1.4x faster than 9 on a published report's results, 2 % larger
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz:
        with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(contents):
                held = contents[name]
                data = held if isinstance(held, bytes) else held.read_bytes()
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), 0, 0o644
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, io.BytesIO(data))
    return files.write_bytes(target, raw.getvalue())


def is_archive(path: pathlib.Path) -> bool:
    return path.is_file() and path.name.endswith((".tar.gz", ".tgz"))


def _checked_member(path: pathlib.Path, member: tarfile.TarInfo, seen: set[str], total: int) -> int:
    """`member`'s size, once it is a flat .json file not seen before and within the limits
    with the `total` read before it; else a `UsageError` naming it."""
    if not member.isfile() or not _MEMBER.match(member.name):
        raise UsageError(f"{path}: unexpected member {member.name!r} (a results archive holds only flat .json files)")
    if member.name in seen:
        raise UsageError(f"{path}: member {member.name!r} appears twice (one of them would be lost)")
    seen.add(member.name)
    total += member.size
    if member.size > MEMBER_LIMIT or total > TOTAL_LIMIT:
        raise UsageError(
            f"{path}: member {member.name!r} is {member.size / 2**20:,.0f} MiB ({total / 2**20:,.0f} MiB so far), "
            f"over the {MEMBER_LIMIT / 2**20:.0f} MiB per document and {TOTAL_LIMIT / 2**30:.0f} GiB in all that "
            "gcbench reads"
        )
    return member.size


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, folder: str) -> None:
    if hasattr(tarfile, "data_filter"):  # 3.10.12, 3.11.4 and later
        tar.extract(member, folder, filter="data")  # streamed to disk, a plain file, no odd modes
        return
    src = tar.extractfile(member)
    if src is None:  # not a regular file: refused above, said here for the types
        raise tarfile.TarError(f"{member.name} is not a regular file")
    with src, open(pathlib.Path(folder) / member.name, "wb") as dst:
        shutil.copyfileobj(src, dst)


def _unpack(path: pathlib.Path, into: str) -> None:
    """The archive's members into `into`, each header checked before anything is read."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            seen: set[str] = set()
            total = 0
            for member in tar:
                total += _checked_member(path, member, seen, total)
                _extract(tar, member, into)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise UsageError(f"{path}: not a readable results archive ({e})") from None


@contextlib.contextmanager
def opened(source: pathlib.Path):
    """A results folder for `source`: the folder itself, or an archive unpacked into a
    temporary folder (only flat JSON files are taken from it)."""
    source = pathlib.Path(source)
    if source.is_dir() and not (source / NAME).is_file():
        yield source
        return
    if source.is_dir() and members(source):
        raise UsageError(f"{source} holds both {NAME} and {len(members(source))} JSON documents of its own: "
                         f"gcbench would read only one of them; pass {source / NAME} to read the archive, or "
                         "move one of them away")
    path = source / NAME if source.is_dir() else source
    if not is_archive(path):
        raise UsageError(f"{source}: neither a results folder nor a {NAME} archive")
    files.sweep_stale_temps("results")
    with tempfile.TemporaryDirectory(prefix=files.owned_temp_prefix("results")) as tmp:
        _unpack(path, tmp)
        try:
            yield pathlib.Path(tmp)
        except UsageError as e:  # a member refused: named in the archive, not in a folder gone by now
            text = str(e).replace(f"{tmp}{os.sep}", f"{path}, member ").replace(str(tmp), str(path))
            raise UsageError(text) from None


def check_size(path: pathlib.Path) -> str | None:
    """A warning when an archive is over what a published report may carry."""
    size = path.stat().st_size
    if size > LIMIT_BYTES:
        return (f"{path.name} is {size / 2**20:.1f} MiB, over the {LIMIT_BYTES / 2**20:.0f} MiB a published report "
                "may carry")
    return None


def documents(folder: pathlib.Path) -> list[pathlib.Path]:
    """Result documents in a folder (for counting), excluding the other documents."""
    return [p for p in members(folder) if p.name not in results.NOT_CELLS]
