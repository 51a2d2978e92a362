"""Grading some students of a class (``--only``), and what no longer belongs to anyone.

``--only ID`` grades again the submissions of the students named, whatever results they
have; every other student keeps the result they have, so their rows of the gradebook stay
byte for byte what they were. A result or feedback report under OUT whose submission is no
longer in the class (a file renamed, a student's id changed, a file removed) is removed
when the gradebook is written, and named: the class report and the feedback show only the
class as it is.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from attnkit.errors import KitError
from attnkit.terminal import one_line

from ..grading.submission import Submission
from .results import result_path

FEEDBACK_SUFFIXES = (".html", ".txt")


def only_these(submissions: list[Submission], only: tuple[str, ...]) -> list[Submission]:
    """The submissions of the students ``only`` names (each by their exact id), or a
    refusal naming the ids that match no submission (a typo must not grade no one)."""
    ids = {s.student for s in submissions}
    unknown = sorted(set(only) - ids)
    if unknown:
        near = sorted(i for i in ids if any(u.lower() in i.lower() for u in unknown))[:10]
        hint = f" (ids that look alike: {one_line(', '.join(near))})" if near else ""
        raise KitError(
            f"--only names no student of the class: {one_line(', '.join(unknown))}{hint}.",
            "Give the student ids exactly as grades.json has them.",
        )
    return [s for s in submissions if s.student in only]


def stale_files(out: Path, submissions: list[Submission]) -> list[Path]:
    """The result files and feedback reports under OUT of no submission of the class."""
    live = {result_path(out, s).relative_to(out / "results") for s in submissions}
    stale = [
        path
        for path in sorted((out / "results").glob("*/*.json"))
        if path.relative_to(out / "results") not in live
    ]
    reports = (out / "feedback").glob("*/*")
    for path in sorted(reports):
        mine = path.relative_to(out / "feedback").with_suffix(".json")
        if path.suffix in FEEDBACK_SUFFIXES and mine not in live:
            stale.append(path)
    return stale


def prune(out: Path, submissions: list[Submission]) -> list[Path]:
    """Remove :func:`stale_files` (and the folders they leave empty); what was removed."""
    removed = []
    for path in stale_files(out, submissions):
        if path.is_symlink() or not path.is_file():
            continue  # only what the kit writes: a regular file
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
        with contextlib.suppress(OSError):
            os.rmdir(path.parent)  # only when empty
    return removed
