"""Unpacking an archive a student uploaded (a zip, a tar), safely, or refusing it by name.

Every byte of a student's archive is the student's: its member names, its headers, its
sizes and modification times. So nothing in it is believed:

* a member is written only as a regular file, under a name made of its path's printable
  parts (no absolute path, no ``..``, no link, device or FIFO, no part over 255 bytes);
* the bytes written are counted as they are decompressed (a header's size is a claim), and
  the archive is refused past :data:`MAX_BYTES` in all or :data:`MAX_MEMBERS` members;
* an archive inside it is unpacked in turn, :data:`MAX_DEPTH` deep at most;
* modification times are not kept (the platform's layer says when a file was handed in).

Whatever the archive holds, :func:`unpack` returns, with nothing or with a reason; what it
wrote for a refused archive is removed.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ..grading.submission import MAX_FILE_BYTES, ascii_lower, text_id

MAX_BYTES = MAX_FILE_BYTES
"""The most bytes one upload may unpack to, nested archives included."""
MAX_MEMBERS = 2000
MAX_DEPTH = 2
MAX_SECONDS = 60.0
"""How long one upload may take to unpack, its nested archives included."""
"""Archives inside an uploaded archive are unpacked this many levels deep."""
SUFFIXES = (".zip", ".tar", ".tar.gz", ".tgz", ".gz")


class Refused(Exception):
    """The upload cannot be unpacked; the message says why."""


def is_archive(name: str) -> bool:
    return ascii_lower(name).endswith(SUFFIXES)


def archive_stem(name: str) -> str:
    """The name without its archive extension: ``work.tar.gz`` is ``work``."""
    lowered = ascii_lower(name)
    for suffix in (".tar.gz", ".tgz", ".tar", ".zip", ".gz"):
        if lowered.endswith(suffix):
            return name[: -len(suffix)] or name
    return name


def safe_part(part: str) -> str:
    """One path part as a file name: printable, no separator, not ``.`` or ``..``."""
    text = "".join(c if c.isprintable() and c not in "/\\\0" else "_" for c in text_id(part))
    if text in ("", ".", ".."):
        raise Refused(f"a member's name has the part {part!r}")
    if len(text.encode("utf-8", "surrogateescape")) > 255:
        raise Refused("a member's name has a part longer than 255 bytes")
    return text


def member_path(name: str) -> list[str]:
    """A member's name as the parts of a relative path, or Refused."""
    if "\0" in name or name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":"):
        raise Refused(f"the member {text_id(name)!r} has an absolute path")
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise Refused(f"the member {text_id(name)!r} climbs out of the archive ('..')")
    return [safe_part(p) for p in parts]


class Budget:
    """What an upload may still write: bytes and members, shared by its nested archives."""

    def __init__(
        self,
        max_bytes: int = MAX_BYTES,
        max_members: int = MAX_MEMBERS,
        seconds: float = MAX_SECONDS,
    ) -> None:
        self.bytes = max_bytes
        self.members = max_members
        self.deadline = time.monotonic() + seconds

    def member(self) -> None:
        """Count one member of any kind (a folder's entry too: an archive of nothing but
        folder headers costs as much to read as one of files)."""
        self.members -= 1
        if self.members < 0:
            raise Refused("it holds more files than an upload may")
        self.in_time()

    def in_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise Refused("it takes longer to unpack than an upload may")

    def copy(self, source: IO[bytes], target: Path) -> None:
        """Copy ``source`` into a new file ``target``, counting every byte."""
        target.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with os.fdopen(os.open(target, flags, 0o600), "wb") as out:
            while chunk := source.read(1 << 20):
                self.bytes -= len(chunk)
                if self.bytes < 0:
                    raise Refused("it unpacks to more bytes than an upload may")
                self.in_time()
                out.write(chunk)


def zip_members(path: Path) -> Iterator[tuple[str, IO[bytes] | None]]:
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            kind = stat.S_IFMT(info.external_attr >> 16)
            if info.is_dir():
                yield info.filename, None  # counted, and nothing to write
                continue
            if kind not in (0, stat.S_IFREG):
                raise Refused(f"the member {text_id(info.filename)!r} is not a regular file")
            with archive.open(info) as handle:
                yield info.filename, handle


MAX_HEADER_BYTES = 64 * 1024
"""The most bytes a tar member's own header may declare (a long name, a pax record):
``tarfile`` reads such a header whole into memory before any other limit can see it."""


class BoundedTarInfo(tarfile.TarInfo):
    """A tar header that refuses a long-name or pax extension larger than
    :data:`MAX_HEADER_BYTES`, before ``tarfile`` reads it."""

    EXTENSIONS = (
        tarfile.GNUTYPE_LONGNAME,
        tarfile.GNUTYPE_LONGLINK,
        tarfile.XHDTYPE,
        tarfile.XGLTYPE,
        tarfile.SOLARIS_XHDTYPE,
    )

    def _proc_member(self, archive: tarfile.TarFile) -> tarfile.TarInfo:  # type: ignore[override]
        if self.type in self.EXTENSIONS and self.size > MAX_HEADER_BYTES:
            raise Refused("a member's header is larger than an upload's may be")
        return super()._proc_member(archive)  # type: ignore[misc]


def is_tar(path: Path) -> bool:
    """Whether ``path`` opens as a tar archive, read with bounded headers."""
    try:
        with tarfile.open(path, tarinfo=BoundedTarInfo):
            return True
    except tarfile.TarError:
        return False


def tar_members(path: Path) -> Iterator[tuple[str, IO[bytes] | None]]:
    with tarfile.open(path, tarinfo=BoundedTarInfo) as archive:
        for info in archive:
            archive.members.clear()  # read as a stream: no header is kept once it is read
            if info.isdir():
                yield info.name, None  # counted, and nothing to write
                continue
            if not info.isreg():
                raise Refused(f"the member {text_id(info.name)!r} is not a regular file")
            yield info.name, archive.extractfile(info)


def members(path: Path) -> Iterator[tuple[str, IO[bytes] | None]]:
    if zipfile.is_zipfile(path):
        return zip_members(path)
    if is_tar(path):
        return tar_members(path)
    raise Refused(f"{text_id(path.name)} is not a zip or tar archive")


def unpack_into(
    path: Path, folder: Path, budget: Budget, depth: int, refused: dict[str, str] | None = None
) -> None:
    """Unpack ``path`` into ``folder``; at ``depth`` 1 and more, the archives in it too
    (0: none, as the LMS's own download, whose students' archives are unpacked one by
    one). With ``refused`` (the LMS's download), a member whose name cannot be written is
    left out and recorded there by its name: it costs its student only."""
    for name, handle in members(path):
        budget.member()
        try:
            parts = member_path(name)
        except Refused as exc:
            if refused is None:
                raise
            refused[text_id(name)] = str(exc)
            continue
        target = folder.joinpath(*parts)
        if handle is None:
            continue
        budget.copy(handle, target)
        if depth and is_archive(target.name):
            if depth >= MAX_DEPTH:
                raise Refused(f"it holds archives more than {MAX_DEPTH} deep")
            inner = target.with_name(safe_part(archive_stem(target.name)))
            if inner.exists():
                raise Refused(f"two members unpack to {text_id(inner.name)!r}")
            unpack_into(target, inner, budget, depth + 1)
            target.unlink()


def unpack(
    path: Path,
    folder: Path,
    budget: Budget | None = None,
    nested: bool = True,
    refused: dict[str, str] | None = None,
) -> str | None:
    """Unpack the uploaded archive ``path`` into the new folder ``folder`` (the archives in
    it too, unless ``nested`` is false): None when it was, else why it was refused (and
    nothing of it is left). With ``refused``, members whose names cannot be written are
    recorded there and left out, and the rest is unpacked (see :func:`unpack_into`)."""
    try:
        folder.mkdir(parents=True)
        unpack_into(path, folder, budget or Budget(), 1 if nested else 0, refused)
    except Refused as exc:
        problem = str(exc)
    except Exception as exc:  # a damaged, encrypted or foreign archive is that upload's problem
        problem = f"it could not be unpacked ({type(exc).__name__}: {text_id(str(exc))[:120]})"
    else:
        return None
    shutil.rmtree(folder, ignore_errors=True)
    return f"{text_id(path.name)}: {problem}"
