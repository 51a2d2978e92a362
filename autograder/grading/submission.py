"""A submission: one student's work on one assignment, and reading its file safely, in
bounded time, and never through a link.

Nothing is opened that is not a regular file: symbolic links, devices, FIFOs and sockets are
refused from ``lstat`` alone, and files are opened with ``O_NOFOLLOW``. Reading is bounded
(:data:`MAX_SUBMISSION_BYTES` of code, :data:`MAX_FILE_BYTES` in all) and linear in the
file's size, nesting depth included.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_SUBMISSION_BYTES = 32 * 1024**2
"""The most code a submission may hold: a notebook is measured with its saved outputs and
attachments stripped, so plots never get a correct notebook refused."""
MAX_FILE_BYTES = 256 * 1024**2
"""The most bytes read from one file at all (outputs included)."""
MAX_CONTAINERS = 1_000_000
"""The most JSON lists and objects (counted as ``[`` and ``{`` bytes) a file may hold: the
grader's memory for parsing grows with them, not with the bytes (a file of empty lists
takes 30 times its size), and no notebook comes near this many."""


class Refused(Exception):
    """A file the grader will not open; the message is the reason."""


def refusal(path: Path, mode: int, size: int) -> str | None:
    """Why ``lstat``'s answer rules the entry out, without opening or following it."""
    if stat.S_ISLNK(mode):
        return (
            f"{path} is a symbolic link: the grader never follows links. "
            "Copy the real file into the submissions folder."
        )
    if not stat.S_ISREG(mode):
        return f"{path} is not a regular file (a device, FIFO or socket); submit a notebook file"
    if size > MAX_FILE_BYTES:
        return (
            f"{path} is {size / 1024**2:.1f} MiB, over the {MAX_FILE_BYTES // 1024**2} MiB "
            "limit: clear the notebook's outputs (Edit > Clear All Outputs) and save it again"
        )
    return None


def without_outputs(notebook: object) -> object | None:
    """A parsed notebook without its cells' outputs and attachments (what counts as its
    code), or None when it is not a JSON object with a list of cells."""
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    stripped = [
        {k: v for k, v in cell.items() if k not in ("outputs", "attachments")}
        if isinstance(cell, dict)
        else cell
        for cell in cells
    ]
    return {**notebook, "cells": stripped}


def code_bytes(data: bytes) -> int:
    """The size that counts towards :data:`MAX_SUBMISSION_BYTES`: a notebook's JSON without
    its cells' outputs and attachments; any other file (or damaged JSON) as it is."""
    try:
        notebook = without_outputs(json.loads(data))
    except (ValueError, RecursionError):
        return len(data)
    if notebook is None:
        return len(data)
    return len(json.dumps(notebook).encode("utf-8"))


def read_submission_file(path: Path) -> bytes:
    """The bytes of a regular file, read through ``O_NOFOLLOW`` with the size limit enforced.

    Raises :class:`Refused` for anything else, checked again on the open descriptor so that
    a file swapped for a link after ``lstat`` is still refused.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symbolic link
            raise Refused(refusal(path, stat.S_IFLNK, 0)) from None
        raise Refused(f"{path} cannot be read ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        reason = refusal(path, info.st_mode, info.st_size)
        if reason:
            raise Refused(reason)
        chunks, total = [], 0
        while chunk := os.read(fd, 1024 * 1024):
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                raise Refused(refusal(path, stat.S_IFREG, total) or "")
            chunks.append(chunk)
        data = b"".join(chunks)
        if data.count(b"[") + data.count(b"{") > MAX_CONTAINERS:
            raise Refused(
                f"{path} holds more than {MAX_CONTAINERS:,} JSON lists and objects: clear "
                "the notebook's outputs (Edit > Clear All Outputs) and save it again"
            )
        if total > MAX_SUBMISSION_BYTES and (code := code_bytes(data)) > MAX_SUBMISSION_BYTES:
            raise Refused(
                f"{path} holds {code / 1024**2:.1f} MiB of code (outputs aside), over the "
                f"{MAX_SUBMISSION_BYTES // 1024**2} MiB limit"
            )
        return data
    finally:
        os.close(fd)


def parse_notebook(data: bytes, path: Path) -> tuple[object, str | None]:
    """(the parsed JSON, or why it cannot be parsed). Linear in the size: the C parser stops
    at the interpreter's recursion limit, which no real notebook comes near; such a file is
    :class:`Refused`, since the grader's own parser would fail on it the same way."""
    try:
        return json.loads(data.decode("utf-8")), None
    except UnicodeDecodeError as exc:
        return None, f"{path} is not UTF-8 text (bad byte at position {exc.start})"
    except RecursionError:
        raise Refused(
            f"{path} nests JSON deeper than any notebook does: re-download or re-save it "
            "from Jupyter"
        ) from None
    except ValueError as exc:
        return None, f"{path} is not valid notebook JSON ({exc}); re-download or re-save it"


@dataclass(frozen=True)
class Submission:
    """One student's work on one assignment, or the reason it cannot be graded.

    ``student`` is the exact id; ``sha256`` is the digest of the bytes discovery read (empty
    when the file was refused unread). ``id_rule`` says which naming convention gave the id,
    and ``notes`` carry what discovery noticed (a late upload, files it set aside).
    """

    student: str
    assignment: str | None
    path: Path
    problem: str | None = None
    sha256: str = ""
    id_rule: str = "file name"
    notes: tuple[str, ...] = ()
    lms_number: str = ""
    """The LMS's own number for the student, where its layout gives one (Moodle's
    participant number): who the student is, whatever name a namesake's arrival gives them."""
    root: str = ""
    """The folder the submission was found in (SUBMISSIONS): what a student is shown names
    their files relative to it, never by the grading machine's absolute paths."""

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment or 'unknown'}"


def text_id(name: str) -> str:
    """A file name as a printable id: bytes that are not UTF-8 are shown as U+FFFD, with a
    short digest of the raw bytes so two such names stay distinct."""
    raw = os.fsencode(name)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"{raw.decode('utf-8', 'replace')}~{hashlib.sha256(raw).hexdigest()[:6]}"


def sha256_file(path: Path) -> str:
    """The digest of a regular file, read without following links; "" for anything else."""
    try:
        return hashlib.sha256(read_submission_file(path)).hexdigest()
    except Refused:
        return ""


ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(name: str) -> str:
    """``name`` with only its ASCII letters lowered: extensions are ASCII, and every other
    character keeps its place (``"İ".lower()`` is two characters, which would shift the
    index of whatever follows it)."""
    return name.translate(ASCII_LOWER)


def is_notebook(path: Path) -> bool:
    """A notebook by its name, whatever its case or an extension added after it."""
    return ".ipynb" in ascii_lower(path.name)


def submission_stem(path: Path) -> str:
    """The name without its submission extension: ``ann_02.IPYNB`` and ``ann_02.ipynb.json``
    are both ``ann_02``."""
    lowered = ascii_lower(path.name)
    for suffix in (".ipynb", ".py"):
        at = lowered.rfind(suffix)
        if at > 0 and (suffix == ".ipynb" or lowered.endswith(suffix)):
            return path.name[:at]
    return path.stem
