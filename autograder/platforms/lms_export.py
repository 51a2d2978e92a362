"""``attnkit export``: the gradebook as an LMS imports it, matched against the course roster.

The roster is the platform's own list of students, a CSV (Canvas's gradebook export,
Moodle's participants list, Gradescope's roster, or any CSV with an id or email column).
Each graded submission must match exactly one roster row by its student id, compared with
the row's ids and email without regard to case. Every roster student with no graded
submission gets a blank or a 0, as the instructor chooses. A submission the grader could
not grade (status ``error``) is never a 0: its cell is blank and it is listed. A submission
that matches no roster row, or more than one, is listed and the export is refused: nothing
is dropped silently, and nothing is written.

Formats (one column per assignment in grades.json, titled with the assignment's title):

* ``canvas``: Canvas's gradebook import CSV. The columns Student, ID, SIS User ID, SIS Login
  ID and Section (copied from the roster where it has them), then the assignments, and a
  "Points Possible" row under the header.
* ``moodle``: Moodle's grade import CSV. An identifier column (Email address where the roster
  has emails, else ID number) and the assignments; Moodle asks which column is which.
* ``gradescope-csv``: Name, SID and Email, then the assignments.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnkit.errors import KitError
from attnkit.terminal import one_line

from ..classes.results import read_gradebook, write_atomic_files
from ..classes.spreadsheet import csv_text
from .lms_columns import Target, choose, wanted_columns
from .nbgrader_gradebook import with_manual_grades
from .roster import CANVAS_COLUMNS, Student, key, read_roster, read_table

__all__ = ["CANVAS_COLUMNS", "FORMATS", "export", "read_roster"]

FORMATS = ("canvas", "moodle", "gradescope-csv")


@dataclass
class Matched:
    """Each roster row's scores by assignment, and what could not be matched or graded."""

    scores: dict[int, dict[str, str]]
    unmatched: list[str]
    ungraded: list[str]
    blank: dict[int, set[str]]
    """Per roster row, the assignments whose submission could not be graded (all of them
    for a submission of no known assignment): blank, never the --missing value."""
    rows: dict[int, int] = field(default_factory=dict)
    """Each graded record's roster row, by the record's id()."""


def match(students: list[Student], records: list[dict[str, Any]], slugs: list[str]) -> Matched:
    matched = Matched({}, [], [], {})
    taken: dict[tuple[int, str], str] = {}
    for record in records:
        student, slug = str(record.get("student")), record.get("assignment")
        rows = [i for i, s in enumerate(students) if key(student) in s.keys]
        label = one_line(f"{student} ({slug or 'unknown assignment'})")
        if len(rows) != 1:
            matched.unmatched.append(
                f"{label}: {'no roster row' if not rows else f'{len(rows)} roster rows'} "
                "match this student id"
            )
            continue
        row = rows[0]
        columns = [slug] if isinstance(slug, str) else slugs
        clash = next((taken[(row, c)] for c in columns if (row, c) in taken), None)
        if clash is not None:
            # Two submissions for one student's cell: the export cannot choose.
            matched.unmatched.append(f"{label}: the roster row of {clash} matches it too")
            continue
        for column in columns:
            taken[(row, column)] = label
        if record.get("status") != "graded" or not isinstance(slug, str):
            matched.ungraded.append(f"{label}: {one_line(str(record.get('error'))[:200])}")
            matched.blank.setdefault(row, set()).update(columns)
            continue
        matched.scores.setdefault(row, {})[slug] = f"{float(record['score']):g}"
        matched.rows[id(record)] = row
    return matched


def moodle_identifier(students: list[Student]) -> tuple[str, list[str]]:
    """The column Moodle matches users by: the email when every row has its own, else the
    roster's first id column when every row has its own; never one shared by two rows."""
    for header, values in (
        ("Email address", [s.email for s in students]),
        (students[0].ident[0] or "ID number", [s.ident[1] for s in students]),
    ):
        if all(values) and len({key(v) for v in values}) == len(values):
            return header, values
    raise KitError(
        "no roster column names every student once (the emails and the ids are missing for "
        "some rows, or shared by two).",
        "Export the roster with each student's own email or id number.",
    )


TEST_STUDENTS = frozenset({"student, test", "test student"})
"""Canvas's test student ("Student, Test"): never given a --missing 0."""


def table(
    kind: str,
    students: list[Student],
    grades: dict[str, Any],
    matched: Matched,
    missing: str,
    targets: list[Target],
) -> list[list[str]]:
    slugs = [t.slug for t in targets]
    titles = [t.header for t in targets]
    if kind == "canvas":
        head = [*CANVAS_COLUMNS, *titles]
        points = ["Points Possible", "", "", "", ""]
        rows = [head, points + [f"{grades['assignments'][s]['max_score']:g}" for s in slugs]]
    elif kind == "moodle":
        column, identifiers = moodle_identifier(students)
        rows = [[column, *titles]]
    else:
        rows = [["Name", "SID", "Email", *titles]]
    for index, student in enumerate(students):
        scores = matched.scores.get(index, {})
        # A roster student with no graded submission: blank or 0, as asked. Never a 0 for a
        # submission that could not be graded: that stays blank and is listed.
        default = "0" if missing == "zero" and key(student.name) not in TEST_STUDENTS else ""
        blank = matched.blank.get(index, set())
        values = [scores.get(s, "" if s in blank else default) for s in slugs]
        name = student.name
        if kind == "canvas":
            fixed = [student.columns.get(c, "") for c in CANVAS_COLUMNS]
            fixed[0] = fixed[0] or student.name
            if not any(fixed[1:4]):
                fixed[3] = student.ident[1] or student.email
            rows.append([*fixed, *values])
        elif kind == "moodle":
            rows.append([identifiers[index], *values])
        else:
            rows.append([name, student.ident[1], student.email, *values])
    return rows


def export(
    out: Path,
    kind: str,
    roster: Path,
    missing: str,
    leave_out: tuple[str, ...] = (),
    columns: tuple[str, ...] = (),
) -> Path:
    """Write OUT/export-KIND.csv (see the module's docstring); ``columns`` are --column's
    values (see :func:`~.lms_columns.wanted_columns`)."""
    grades = with_manual_grades(out, read_gradebook(out))
    table_of = read_table(roster)
    students = table_of.students
    slugs = sorted(grades["assignments"])
    wanted = wanted_columns(columns, slugs)
    targets = [
        choose(table_of, kind, slug, grades["assignments"][slug], wanted.get(slug))
        for slug in slugs
    ]
    for target in targets:
        where = "its existing column" if target.existing else "a new column"
        print(f"{target.slug}: into {where} {one_line(target.header)!r}")
    grades = {**grades, "submissions": chosen(grades["submissions"], leave_out, students)}
    matched = match(students, grades["submissions"], sorted(grades["assignments"]))
    if matched.unmatched:
        raise KitError(
            f"{len(matched.unmatched)} submission(s) match no single roster row, so nothing was "
            "exported:\n  " + "\n  ".join(matched.unmatched[:200]),
            f"Add them to {roster} (or fix their ids), then export again; a student who is on "
            "no roster on purpose (a visitor, a withdrawn student) is left out with "
            "--leave-out STUDENT.",
        )
    for line in matched.ungraded:
        print(f"not graded, left blank: {line}")
    for record in grades["submissions"]:
        why = record.get("late")
        if isinstance(why, dict) and why.get("status") in ("unreadable time", "no time recorded"):
            who = one_line(f"{record.get('student')} ({record.get('assignment')})")
            print(f"late policy not applied, raw score exported: {who}: {why['status']}")
    # Every cell quoted, so no separator in a name splits it in any locale, and safe to open.
    target = out / f"export-{kind}.csv"
    rows = table(kind, students, grades, matched, missing, targets)
    files = {target: csv_text(rows, csv.QUOTE_ALL)}
    if any("late" in r for r in grades["submissions"]):
        files[out / f"export-{kind}-late.csv"] = late_table(students, grades, matched, targets)
    if any("manual" in r for r in grades["submissions"]):
        files[out / f"export-{kind}-manual.csv"] = manual_table(students, grades, matched)
    write_atomic_files(files)
    return target


def chosen(
    records: list[dict[str, Any]], leave_out: tuple[str, ...], students: list[Student]
) -> list[dict[str, Any]]:
    """The gradebook's rows less those of the students the instructor left out by their
    exact id, each listed. An id that names no row is refused (a typo leaves nobody out),
    and so is one on the roster: leaving them out would blank (or zero) a real grade."""
    ids = {str(r.get("student")) for r in records}
    unknown = sorted(set(leave_out) - ids)
    if unknown:
        raise KitError(
            f"--leave-out names no student of the gradebook: {one_line(', '.join(unknown))}.",
            "Give the student ids exactly as grades.json has them.",
        )
    listed = sorted(s for s in set(leave_out) if any(key(s) in row.keys for row in students))
    if listed:
        raise KitError(
            f"--leave-out names a student who is on the roster: {one_line(', '.join(listed))}.",
            "--leave-out is for submissions of students on no roster; export them as they are.",
        )
    for student in sorted(set(leave_out)):
        print(f"left out on purpose: {one_line(student)}")
    return [r for r in records if str(r.get("student")) not in leave_out]


LATE_HEADER = [
    "Roster id",
    "Email",
    "Student",
    "Assignment",
    "Raw score",
    "Score",
    "Late",
    "Days late",
    "Penalty %",
    "Reason",
]


def late_table(
    students: list[Student], grades: dict[str, Any], matched: Matched, targets: list[Target]
) -> str:
    """The late policy's decisions beside the export: the platform's columns take only
    the final score (a column Canvas does not know becomes a new assignment there), so
    the raw score and the reason for each graded submission are written here."""
    rows: list[list[Any]] = [LATE_HEADER]
    for record in grades["submissions"]:
        why, row = record.get("late"), matched.rows.get(id(record))
        if not isinstance(why, dict) or row is None:
            continue
        student = students[row]
        title = next(t.header for t in targets if t.slug == record["assignment"])
        rows.append(
            [
                student.ident[1],
                student.email,
                record["student"],
                title,
                f"{float(record['raw_score']):g}",
                f"{float(record['score']):g}",
                why["status"],
                why["days_late"],
                f"{float(why['penalty_percent']):g}",
                why["reason"],
            ]
        )
    return csv_text(rows, csv.QUOTE_ALL)


def manual_table(students: list[Student], grades: dict[str, Any], matched: Matched) -> str:
    """What was graded by hand in nbgrader's formgrader, beside the export (whose scores
    already include it): the points added and the comments, for the platform's comment
    box."""
    rows: list[list[Any]] = [
        ["Roster id", "Email", "Student", "Assignment", "Points added", "Comments"]
    ]
    for record in grades["submissions"]:
        manual, row = record.get("manual"), matched.rows.get(id(record))
        if not isinstance(manual, dict) or row is None:
            continue
        student = students[row]
        rows.append(
            [
                student.ident[1],
                student.email,
                record["student"],
                record["assignment"],
                f"{manual['points']:g}",
                "\n\n".join(manual["comments"]),
            ]
        )
    return csv_text(rows, csv.QUOTE_ALL)
