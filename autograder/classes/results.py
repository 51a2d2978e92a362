"""Result files and the gradebook: where a grading's outcome is kept, and how.

Each submission's result is one file, written atomically:
``OUT/results/<student-slug>-<hash>/<assignment>.json``. A rerun skips what already has a
current result (the same submitted bytes), so an interrupted run loses at most the
submissions in flight. ``grades.json`` and ``grades.csv`` are rebuilt from the result files,
together and atomically; they hold no timings, so a resumed run writes exactly the same
files as an uninterrupted one. A lock file keeps two runs off the same OUT.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from attnkit.assignments import ASSIGNMENTS
from attnkit.errors import KitError
from attnkit.files import as_new_file
from attnkit.outcome import PASSED
from attnkit.terminal import one_line

from ..grading.records import ResultRecord, student_view
from ..grading.submission import Submission, sha256_file, text_id
from ..lessons.rubric import graded_cells
from .discovery import OUT_MARKER
from .spreadsheet import csv_text

SCHEMA = "attnkit-grades/1"


def stage(path: Path, text: str) -> str:
    """Write ``text`` to a fsynced temporary file beside ``path``; returns its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        as_new_file(fd)  # not mkstemp's 0600: OUT is shared with TAs, a web folder
        # backslashreplace: a name that is not UTF-8 must never stop the gradebook's writing.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block has run: a Ctrl-C between two renames would
    leave one new file beside an old one. A signal that came meanwhile is raised again at
    the end (only the main thread receives signals; elsewhere the block just runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def remember(signum: int, frame: Any) -> None:
        caught.append(signum)

    previous = {s: signal.signal(s, remember) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        for caught_number in dict.fromkeys(caught):
            signal.raise_signal(caught_number)


def write_atomic_files(files: dict[Path, str]) -> None:
    """Write several files so that readers see all the old ones or all the new ones.

    Every file is staged in full first; only then are they renamed into place, which needs
    no disk space, with Ctrl-C held back (:func:`signals_deferred`). A failure or an
    interrupt while staging (a full disk) leaves every old file untouched.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            staged.append((stage(path, text), path))
        with signals_deferred():
            for tmp, path in staged:
                os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    write_atomic_files({path: text})


def disk_advice(path: Path, exc: OSError) -> str:
    """What went wrong writing ``path``, and what to do about it."""
    where = path.parent
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        free = shutil.disk_usage(where).free if where.exists() else 0
        return (
            f"cannot write {path}: the disk holding {where} is full ({free // 1024} KiB free). "
            "Free some space there (a class needs a few MiB) and run the same command again: "
            "everything graded so far is kept"
        )
    return f"cannot write {path} ({exc.strerror or exc}): fix that and run the same command again"


STORAGE_CHARACTERS = re.compile(r"[^\w-]+")


def storage_name(student: str) -> str:
    """The folder that holds a student's results: a readable part plus a digest of the exact
    id, so ids that read alike (``li wei``, ``li_wei``) never share a folder, and no id
    (``..``, ``/``, control characters, 1,000 characters) can name a path outside it. The
    digest has 80 bits: a student cannot search for a name whose folder is another's."""
    readable = STORAGE_CHARACTERS.sub("_", student)[:40].strip("_") or "student"
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return f"{readable}-{digest}"


def result_path(out: Path, submission: Submission) -> Path:
    """``OUT/results/<storage name>/<assignment>.json``, always inside ``OUT/results``."""
    if submission.assignment in ASSIGNMENTS:
        name = submission.assignment
    else:  # several files of unknown assignment may belong to one student
        name = "unknown-" + hashlib.sha256(os.fsencode(submission.path)).hexdigest()[:20]
    results = out / "results"
    path = results / storage_name(submission.student) / f"{name}.json"
    # The parts are built above from [\w-] and a digest; this guards the guarantee itself.
    assert os.path.normpath(path).startswith(os.path.normpath(results) + os.sep), path
    assert len(path.relative_to(results).parts) == 2, path
    return path


def deliver(record: ResultRecord, target: Path, stamp: str = "") -> tuple[str, str]:
    """Write a result file, stamped with what it was graded with; ("done", status), or
    ("lost", why) when it cannot be written."""
    stamped: ResultRecord = {**record, "graded_with": stamp}
    try:
        write_atomic(target, json.dumps(stamped, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        return "lost", disk_advice(target, exc)
    return "done", record["status"]


@contextlib.contextmanager
def exclusive(out: Path) -> Iterator[None]:
    """Hold OUT for this run; a second run on the same OUT is refused with what to do."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / OUT_MARKER, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KitError(
                f"another `attnkit grade` is writing to {out}.",
                "Wait for it to finish, or give this run a different --out.",
            ) from None
        yield


def read_record(path: Path) -> dict[str, Any] | None:
    """A result file as written (run details included), or None when it is absent or not
    one: such a file is as good as no result, never an error of the submission's."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def is_current(
    record: dict[str, Any] | None, sha256: str, feedback: bool = False, stamp: str | None = None
) -> bool:
    """Whether ``record`` is a result of the file whose digest is ``sha256``, graded with
    ``stamp`` (when given; see :class:`~attnkit_autograder.grading.pipeline.GradeSettings`), with
    the feedback data if it is wanted. A result that records a fault of the grader is not."""
    if record is None or record.get("fault") == "grader":
        return False
    if stamp is not None and record.get("graded_with") != stamp:
        return False
    if feedback and record.get("status") == "graded" and "heatmap" not in record:
        return False
    return record.get("source_sha256") == sha256


def number(value: Any) -> bool:
    """A finite number of a sane size (an int of 400 digits is no score)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return abs(value) < 2**53 if isinstance(value, int) else math.isfinite(value)


def record_problem(record: dict[str, Any]) -> str | None:
    """What makes ``record`` unfit for a gradebook (a field the gradebook reads that is
    missing or of the wrong kind), or None: a result file is read like any other file."""
    if not isinstance(record.get("student"), str) or not isinstance(record.get("source"), str):
        return "no student or source"
    if not (record.get("assignment") is None or isinstance(record.get("assignment"), str)):
        return "assignment is not text"
    status = record.get("status")
    if status not in ("graded", "error", INCOMPLETE):
        return "status is neither graded, error nor incomplete"
    unscored = status == INCOMPLETE and record.get("score") is None
    if not ((unscored or number(record.get("score"))) and number(record.get("max_score"))):
        return "score is not a number"
    if not (record.get("error") is None or isinstance(record.get("error"), str)):
        return "error is not text"
    tests = record.get("tests")
    if not isinstance(tests, list) or not all(
        isinstance(t, dict) and isinstance(t.get("grade_id"), str) and number(t.get("points"))
        for t in tests
    ):
        return "tests are not graded cells"
    return None


def why_not_current(path: Path, sha256: str, stamp: str | None = None) -> str | None:
    """Why the result at ``path`` does not count for the file whose digest is ``sha256``
    (graded with ``stamp``), in words for the instructor, or None when it does."""
    record = read_record(path)
    if record is None:
        return "no result was recorded"
    if record.get("fault") == "grader":
        return f"the grader failed on it ({one_line(str(record.get('error'))[:300])})"
    if not is_current(record, sha256):
        return "its result is of another version of the file"
    if not is_current(record, sha256, stamp=stamp):
        return "its result was graded with other hidden tests or options"
    return None


def already_graded(
    out: Path, submission: Submission, feedback: bool = False, stamp: str | None = None
) -> bool:
    """Graded before into ``out``, from the same file (see :func:`is_current`)."""
    record = read_record(result_path(out, submission))
    if record is None:
        return False
    sha256 = submission.sha256 or sha256_file(submission.path)
    return is_current(record, sha256, feedback, stamp)


def pending(
    submissions: list[Submission],
    out: Path,
    feedback: bool = False,
    force: bool = False,
    stamp: str | None = None,
) -> list[Submission]:
    """The submissions that still need grading into ``out`` (all of them with ``force``)."""
    return [s for s in submissions if force or not already_graded(out, s, feedback, stamp)]


def missing(submissions: list[Submission], out: Path, stamp: str | None = None) -> list[Submission]:
    """The submissions with no current result in ``out``: a complete run has none."""
    return [s for s in submissions if not already_graded(out, s, stamp=stamp)]


# -- the gradebook files ---------------------------------------------------------------------


def public_record(record: dict[str, Any]) -> dict[str, Any]:
    """A result without what changes from run to run (timings, sandbox details), without
    the feedback report's bulky data, and without the grader's own bookkeeping."""
    return {k: v for k, v in record.items() if k not in ("run", "heatmap", "fault", "graded_with")}


def read_result(path: Path) -> dict[str, Any] | None:
    record = read_record(path)
    return None if record is None else public_record(record)


Adjust = Callable[[Path, dict[str, Any]], dict[str, Any]]
"""What the gradebook does to a result before it lists it (the late policy), by its path."""


def collect(paths: list[Path], adjust: Adjust | None = None) -> list[dict[str, Any]]:
    """The public records of the result files ``paths`` (those that hold one), each as
    ``adjust`` leaves it, in the gradebook's order."""
    records = [
        r if adjust is None else adjust(path, r)
        for path in paths
        if (r := read_result(path)) is not None
    ]
    records.sort(key=row_order)
    return records


def row_order(record: dict[str, Any]) -> tuple[str, str, str]:
    """The gradebook's order: by student, assignment, then file."""
    return (record["student"], record["assignment"] or "", record["source"])


INCOMPLETE = "incomplete"
"""The status of a gradebook row whose submission has no current result (yet)."""


def incomplete_row(submission: Submission, why: str) -> dict[str, Any]:
    """The gradebook's row of a discovered submission that has no current result (the run
    was interrupted, the grader failed on it): listed with the reason and no score, which
    an export leaves blank, never a 0."""
    slug = submission.assignment
    cells = graded_cells(slug) if slug in ASSIGNMENTS else ()
    return {
        "student": submission.student,
        "assignment": slug,
        "source": text_id(str(submission.path)),
        "source_sha256": submission.sha256 or "",
        "status": INCOMPLETE,
        "error": f"INCOMPLETE: {one_line(student_view(why, submission))}",
        "score": None,
        "max_score": sum(c.points for c in cells),
        "tests": [],
        "notes": [],
        "id_rule": submission.id_rule,
    }


def result_paths(out: Path, submissions: list[Submission] | None = None) -> list[Path]:
    """Where the results of ``submissions`` go in OUT (default: every result file there)."""
    if submissions is None:
        return sorted((out / "results").glob("*/*.json"))
    return [result_path(out, s) for s in submissions]


LATE_COLUMNS = ["raw_score", "late", "late_reason"]


def write_gradebook(
    out: Path,
    paths: list[Path],
    adjust: Adjust | None = None,
    unfinished: Iterable[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Write ``grades.json`` and ``grades.csv`` together (see :func:`write_atomic_files`)
    from the result files ``paths`` (see :func:`result_paths`), each as ``adjust`` leaves
    it (a late policy adds the raw score and why), and the rows of submissions with no
    result (:func:`incomplete_row`). The files hold nothing of where or when the results
    were made: the same results give the same bytes."""
    records = sorted([*collect(paths, adjust), *unfinished], key=row_order)
    assignments = sorted({r["assignment"] for r in records if r["assignment"] in ASSIGNMENTS})
    document = {
        "schema": SCHEMA,
        "assignments": {
            slug: {
                "title": ASSIGNMENTS[slug].title,
                "max_score": sum(c.points for c in graded_cells(slug)),
                "cells": [asdict(c) for c in graded_cells(slug)],
            }
            for slug in assignments
        },
        "submissions": records,
    }
    late = adjust is not None
    head = ["student", "assignment", "status", "score", "max_score", "error"]
    rows = [head + LATE_COLUMNS if late else head]
    for r in records:
        score = "" if r["score"] is None else r["score"]
        row = [r["student"], r["assignment"] or "", r["status"], score, r["max_score"]]
        row.append(r["error"] or "")
        if late:
            why = r.get("late") or {}
            row += [r.get("raw_score", r["score"]), why.get("status", ""), why.get("reason", "")]
        rows.append(row)
    write_atomic_files(
        {
            out / "grades.json": json.dumps(document, indent=1, sort_keys=True) + "\n",
            out / "grades.csv": csv_text(rows),
        }
    )
    return records


def read_gradebook(out: Path) -> dict[str, Any]:
    """OUT's grades.json as :func:`write_gradebook` wrote it, checked row by row (what an
    export and the class report read), or one KitError naming the file and the row."""
    try:
        document = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KitError(
            f"{out} holds no grades.json.", "Run attnkit grade (or merge) first."
        ) from None
    except (OSError, ValueError, RecursionError) as exc:
        raise KitError(f"{out / 'grades.json'} cannot be read ({str(exc)[:200]}).") from None
    path = out / "grades.json"
    if not isinstance(document, dict) or document.get("schema") != "attnkit-grades/1":
        raise KitError(f"{path} is not a gradebook attnkit wrote.")
    assignments, records = document.get("assignments"), document.get("submissions")
    if not isinstance(assignments, dict) or not isinstance(records, list):
        raise KitError(f"{path} is not a gradebook attnkit wrote (no assignments or rows).")
    for slug, info in assignments.items():
        if not (
            isinstance(info, dict)
            and isinstance(info.get("title"), str)
            and number(info.get("max_score"))
        ):
            raise KitError(f"{path}: assignment {one_line(str(slug))!r} is malformed.")
    for line, record in enumerate(records, 1):
        problem = record_problem(record) if isinstance(record, dict) else "not an object"
        if problem is None and "late" in record:
            problem = late_problem(record)
        if (
            problem is None
            and record["status"] == "graded"
            and record["assignment"] not in assignments
        ):
            problem = "graded for an assignment the gradebook does not list"
        if problem is not None:
            raise KitError(
                f"{path}: submission row {line} is malformed ({problem}).",
                "Rebuild the gradebook: run attnkit grade (or merge) again.",
            )
    return document


def late_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a row's late-policy fields (see :mod:`.late`), or None."""
    why = record["late"]
    if not (
        number(record.get("raw_score"))
        and isinstance(why, dict)
        and all(isinstance(why.get(k), str) for k in ("status", "reason"))
        and number(why.get("days_late"))
        and number(why.get("penalty_percent"))
    ):
        return "its late-policy fields are malformed"
    return None


def summary_table(records: list[dict[str, Any]]) -> str:
    """Per graded cell: how many submissions passed it."""
    rows: dict[tuple[str, str], list[int]] = {}
    for record in records:
        for test in record["tests"]:
            counts = rows.setdefault((record["assignment"], test["grade_id"]), [0, 0])
            counts[0] += test["status"] == PASSED
            counts[1] += 1
    if not rows:
        return "no graded cells"
    width = max(len(g) for _, g in rows) + 2
    first = max(24, max(len(s) for s, _ in rows) + 2)
    lines = [f"{'assignment':<{first}}{'graded cell':<{width}}passed"]
    for (slug, grade_id), (passed, total) in sorted(rows.items()):
        lines.append(f"{slug:<{first}}{grade_id:<{width}}{passed}/{total}")
    errors = sum(r["status"] == "error" for r in records)
    unfinished = sum(r["status"] == INCOMPLETE for r in records)
    more = f", {unfinished} INCOMPLETE (no result yet)" if unfinished else ""
    lines.append(f"{len(records)} submissions, {errors} could not be graded{more}")
    return "\n".join(lines)
