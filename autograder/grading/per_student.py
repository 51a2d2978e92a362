"""Per-student hidden inputs: ``attnkit grade --seed-per-student``.

Each submission's hidden tests draw their random inputs from a salt of its own (see
:mod:`attnkit_autograder.grading.suite_support`): the first 64 bits of

    HMAC-SHA256(course secret, assignment slug + "\\0" + student id)

where the student id is the one discovery gave the submission (its folder or file name,
or the LMS's id), never anything written inside the file. The course secret comes from
``--course-secret FILE`` or the environment variable ``ATTNKIT_COURSE_SECRET``. It is never
written anywhere: class.json records a short digest of it, and every result's stamp
includes that digest, so results graded with another secret are not current and are
graded again.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from attnkit.errors import KitError

SECRET_VARIABLE = "ATTNKIT_COURSE_SECRET"
MIN_SECRET_BYTES = 16
"""A shorter secret could be guessed from one student's own inputs (which their code
sees), and every other student's inputs computed from it."""
MAKE_ONE = (
    "Make one with: (umask 077; python3 -c 'import secrets; print(secrets.token_hex(32))' > FILE)"
)


class CourseSecretError(KitError):
    """The course secret is missing or unusable: a usage error (exit status 2)."""

    exit_code = 2


class CourseSecret:
    """The course secret, which prints as its digest only."""

    def __init__(self, value: bytes, path: Path | None = None) -> None:
        self._value = value
        self.path = path
        """The file it was read from (None: the environment)."""
        self.digest = hashlib.sha256(b"attnkit course secret\0" + value).hexdigest()[:12]

    def __repr__(self) -> str:
        return f"CourseSecret(digest={self.digest!r})"

    def salt(self, slug: str, student: str) -> int:
        """The salt of ``student``'s inputs for assignment ``slug`` (64 bits)."""
        message = f"{slug}\0{student}".encode("utf-8", "surrogateescape")
        return int.from_bytes(hmac.new(self._value, message, hashlib.sha256).digest()[:8], "big")


def from_file(path: Path) -> bytes:
    """The secret in ``path``, refused when it is not a private, readable, long enough file."""
    fix = f"Give a file only you can read, holding a long random secret. {MAKE_ONE}"
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise CourseSecretError(f"the course secret {path} is not a file.", fix)
        if info.st_mode & stat.S_IROTH:
            raise CourseSecretError(
                f"the course secret {path} is readable by every user of this machine.",
                f"Run: chmod o-rwx {path} (or chmod 600), then grade again.",
            )
        value = path.read_bytes().strip()
    except OSError as exc:
        raise CourseSecretError(
            f"cannot read the course secret {path}: {exc.strerror or exc}.", fix
        ) from None
    return checked(value, str(path))


def checked(value: bytes, where: str) -> bytes:
    if not value:
        raise CourseSecretError(f"the course secret {where} is empty.", MAKE_ONE)
    if len(value) < MIN_SECRET_BYTES:
        raise CourseSecretError(
            f"the course secret {where} is shorter than {MIN_SECRET_BYTES} characters: a "
            "student could guess it from their own inputs.",
            MAKE_ONE,
        )
    return value


def read_secret(path: Path | None, environ: Mapping[str, str]) -> CourseSecret:
    """The course secret: from ``path`` when given, else from $ATTNKIT_COURSE_SECRET."""
    if path is not None:
        return CourseSecret(from_file(path), path)
    if SECRET_VARIABLE in environ:
        value = environ[SECRET_VARIABLE].encode("utf-8", "surrogateescape").strip()
        return CourseSecret(checked(value, f"in ${SECRET_VARIABLE}"))
    raise CourseSecretError(
        "--seed-per-student needs the course secret, and none was given.",
        f"Pass --course-secret FILE, or set ${SECRET_VARIABLE}. {MAKE_ONE}",
    )


@contextlib.contextmanager
def inputs_of(
    secret: CourseSecret | None, slug: str, student: str, reference: Any
) -> Iterator[Any]:
    """The hidden tests of ``student``'s submission inside this block draw their random
    inputs from the student's salt, and the reference's answers to them are forgotten
    afterwards; the block gives the seeds drawn (a ``suite_support.Draws``). Without a
    secret, nothing changes, and it gives None."""
    if secret is None:
        yield None
        return
    from .suite_support import salted

    with salted(secret.salt(slug, student)) as draws, reference.one_submission():
        yield draws
