"""One result record: the entry of each graded cell, the record of a submission that could
not be graded, and the notes a record may carry."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from attnkit.assignments import ASSIGNMENTS
from attnkit.outcome import ERROR

from ..lessons.rubric import GradedCell, graded_cells
from .submission import Submission, sha256_file, text_id


class CellEntry(TypedDict):
    """One graded cell of a result (an entry of the record's ``tests``)."""

    grade_id: str
    exercise: str
    points: float
    max_points: float
    status: str
    """passed, failed, forbidden, error or timeout (:mod:`attnkit.outcome`)."""
    message: str
    hint: str | None
    checks_passed: int
    checks_total: int
    diagnosis: dict[str, Any] | None
    """The classic mistake the evidence singles out, if one does."""


class LateVerdict(TypedDict):
    """What the late policy decided for a result (the record's ``late``)."""

    status: str
    source: str
    submitted: str
    days_late: int
    penalty_percent: float
    reason: str


class ResultRecord(TypedDict):
    """One submission's result: a row of grades.json, with the run's details in the result
    file. Every writer of a record builds this shape, and every reader gets it."""

    student: str
    assignment: str | None
    source: str
    """The submitted file, as a printable id."""
    source_sha256: str
    status: str
    """graded, or error (the submission could not be graded: ``error`` says why)."""
    error: str | None
    score: float
    max_score: float
    tests: list[CellEntry]
    notes: list[str]
    fault: NotRequired[str]
    """grader: the kit failed, not the submission (a rerun grades it again)."""
    id_rule: NotRequired[str]
    """Which naming convention gave the student id (discovery)."""
    sandbox: NotRequired[str]
    heatmap: NotRequired[dict[str, Any] | None]
    run: NotRequired[dict[str, Any]]
    """How the grading ran: seconds, phases, workers, kernels (never in grades.json)."""
    graded_with: NotRequired[str]
    """The stamp of what it was graded with (:mod:`attnkit_autograder.classes.results`)."""
    raw_score: NotRequired[float]
    """The score before the late policy (present when a policy was applied)."""
    late: NotRequired[LateVerdict]


def cell_entry(
    cell: GradedCell,
    points: float,
    status: str,
    message: str,
    hint: str | None = None,
    checks_passed: int = 0,
    checks_total: int = 0,
) -> CellEntry:
    """One graded cell's entry in a result (the ``tests`` list of grades.json)."""
    return {
        "grade_id": cell.grade_id,
        "exercise": cell.exercise,
        "points": points,
        "max_points": cell.points,
        "status": status,
        "message": message,
        "hint": hint,
        "checks_passed": checks_passed,
        "checks_total": checks_total,
        "diagnosis": None,
    }


def error_record(
    submission: Submission, reason: str, status: str = ERROR, fault: str = "submission"
) -> ResultRecord:
    """A submission that could not be graded: every graded cell 0 with ``status`` (``error``,
    or ``timeout`` when the budget ran out). ``fault: "grader"`` marks a failure of the
    grader itself, which a rerun grades again."""
    slug = submission.assignment
    cells = graded_cells(slug) if slug in ASSIGNMENTS else ()
    record: ResultRecord = {
        "student": submission.student,
        "assignment": slug,
        "source": text_id(str(submission.path)),
        "source_sha256": submission.sha256 or sha256_file(submission.path),
        "status": "error",
        "error": reason,
        "score": 0.0,
        "max_score": sum(c.points for c in cells),
        "tests": [cell_entry(c, 0.0, status, reason) for c in cells],
        "notes": [],
    }
    if fault != "submission":
        record["fault"] = fault
    return record


MAX_NOTES = 40
MAX_NOTE_CHARS = 400
MAX_NOTES_CHARS = 8_000
"""A submission decides how many notes it causes (a cell that raises in a loop, a
thousand forbidden names): a record keeps this many, this long, and says how many more."""


def capped_notes(notes: list[str]) -> list[str]:
    """At most MAX_NOTES notes of at most MAX_NOTE_CHARS printable characters each,
    MAX_NOTES_CHARS in all; the last line says how many were left out."""
    kept: list[str] = []
    size = 0
    for note in notes:
        # Notes quote what a submission wrote (its errors, its file names): control bytes,
        # NULs and direction overrides become "?" before they reach a report or a terminal.
        # One character past the limit is kept, so that a cut note still ends with "…".
        text = "".join(c if c.isprintable() else "?" for c in str(note)[: MAX_NOTE_CHARS + 1])
        if len(text) > MAX_NOTE_CHARS:
            text = text[: MAX_NOTE_CHARS - 1] + "…"
        if len(kept) == MAX_NOTES or size + len(text) > MAX_NOTES_CHARS:
            break
        kept.append(text)
        size += len(text)
    if len(kept) < len(notes):
        kept.append(f"{len(notes) - len(kept)} more notes")
    return kept


def machine_folders(submission: Submission) -> list[tuple[str, str]]:
    """The grading machine's folders a message may name, longest first, each with what a
    student is shown instead: the submissions folder (the student's files are named relative
    to it), the Python installation and the kit's own source."""
    kit = str(Path(__file__).resolve().parents[2])
    folders = {
        sys.prefix: "<python>",
        sys.base_prefix: "<python>",
        sys.exec_prefix: "<python>",
        kit: "<kit>",
    }
    if submission.root:
        folders[submission.root] = "."
    ordered = sorted(folders.items(), key=lambda pair: -len(pair[0]))
    return [(folder, shown) for folder, shown in ordered if len(folder) > 1]


def student_view(text: str, submission: Submission) -> str:
    """``text`` with every folder of :func:`machine_folders` replaced: ``hal_02.ipynb``
    for ``/home/me/class/hal_02.ipynb`` when ``/home/me/class`` is SUBMISSIONS."""
    for folder, shown in machine_folders(submission):
        if folder not in text:
            continue
        within = "" if shown == "." else shown + os.sep
        text = text.replace(folder + os.sep, within)
        # The folder itself, not a longer name it begins (/srv/class, not /srv/classic).
        text = re.sub(re.escape(folder) + r"(?![\w-])", shown.replace("\\", r"\\"), text)
    return text


def identified(record: ResultRecord, submission: Submission) -> ResultRecord:
    """The record, with how the student was identified and what discovery noticed; its
    notes capped (see :func:`capped_notes`); every message naming the student's files
    relative to SUBMISSIONS and no other folder of the grading machine (:func:`student_view`)."""
    record["id_rule"] = submission.id_rule
    notes = [student_view(n, submission) for n in [*submission.notes, *record["notes"]]]
    record["notes"] = capped_notes(notes)
    if record["error"] is not None:
        record["error"] = student_view(record["error"], submission)
    for test in record["tests"]:
        test["message"] = student_view(test["message"], submission)
        if test["hint"] is not None:
            test["hint"] = student_view(test["hint"], submission)
    return record
