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
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnkit.errors import KitError
from attnkit.terminal import one_line

from ..classes.results import csv_text, read_gradebook, write_atomic_files

FORMATS = ("canvas", "moodle", "gradescope-csv")
MAX_ROSTER_BYTES = 16 * 1024 * 1024

ID_COLUMNS = ("sis login id", "login id", "username", "id", "sis user id", "student id", "sid",
              "id number", "user id")  # fmt: skip
EMAIL_COLUMNS = ("email", "email address", "e-mail")
NAME_COLUMNS = ("student", "name", "full name", "student name")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


@dataclass(frozen=True)
class Student:
    """One roster row: the keys a submission's id may match, and what the export copies."""

    keys: frozenset[str]
    name: str
    email: str
    ident: tuple[str, str]
    """The row's first id, as (column, value), exactly as the roster has it."""
    columns: dict[str, str]


MAX_COLUMNS, MAX_ROWS = 1_000, 200_000


def refuse(path: Path, why: str) -> KitError:
    return KitError(
        f"{path} is not a roster the kit can read ({why}).",
        "Give the platform's student list as a CSV with a header row and an id or email column.",
    )


def key(text: str) -> str:
    """How ids and emails are compared: case aside, nothing else folded or stripped."""
    return text.lower()


def roster_rows(path: Path, data: bytes) -> list[tuple[int, list[str]]]:
    """The roster file's CSV rows, each with the line it ends on, or a refusal naming the
    line that is not CSV text."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise refuse(path, f"line {line} is not UTF-8 text") from None
    if "\0" in text:
        raise refuse(path, f"line {text[: text.index(chr(0))].count(chr(10)) + 1} holds a NUL byte")
    rows: list[list[str]] = []
    lines: list[int] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for row in reader:
            if len(row) > MAX_COLUMNS or len(rows) >= MAX_ROWS:
                why = f"over {MAX_COLUMNS} columns or {MAX_ROWS} rows"
                raise refuse(path, f"line {reader.line_num}: {why}")
            rows.append(row)
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise refuse(path, f"line {reader.line_num} is not CSV: {exc}") from None
    return list(zip(lines, rows, strict=True))


def read_roster(path: Path) -> list[Student]:
    """The roster's students, or one KitError that says what is wrong with the file."""
    if not path.is_file():
        raise refuse(path, "not a regular file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ROSTER_BYTES + 1)
    except OSError as exc:
        raise refuse(path, exc.strerror or str(exc)) from None
    if len(data) > MAX_ROSTER_BYTES:
        raise refuse(path, "over 16 MiB")
    rows = roster_rows(path, data)
    if not rows:
        raise refuse(path, "empty")
    header = [h.strip() for h in rows[0][1]]
    lower = [h.lower() for h in header]
    ids = sorted(
        (i for i, h in enumerate(lower) if h in ID_COLUMNS),
        key=lambda i: ID_COLUMNS.index(lower[i]),
    )
    emails = [i for i, h in enumerate(lower) if h in EMAIL_COLUMNS]
    names = [i for i, h in enumerate(lower) if h in NAME_COLUMNS]
    canvas = [(i, h) for i, h in enumerate(header) if h in CANVAS_COLUMNS]
    if not ids and not emails:
        columns = ", ".join(map(repr, header[:20]))
        raise refuse(path, f"line 1, the header, has no id or email column among {columns}")
    students = []
    for number, row in rows[1:]:

        def cell(i: int, row: list[str] = row) -> str:
            return row[i].strip() if i < len(row) else ""

        if not any(c.strip() for c in row) or cell(0).lower() == "points possible":
            continue  # a blank line, or Canvas's points row
        filled = len(row) - next((i for i, c in enumerate(reversed(row)) if c.strip()), 0)
        if filled > len(header) or len(row) < len(header):
            # More cells than the header (trailing empty ones aside), or fewer: a comma that
            # lost its quotes, or a cell lost; either way the columns would shift.
            why = f"{len(row)} cells under a header of {len(header)}"
            raise refuse(path, f"line {number} has {why} (a comma that lost its quotes?)")
        if [c.strip() for c in row] == header:
            raise refuse(path, f"line {number} repeats the header")
        keys = frozenset(key(cell(i)) for i in ids + emails if cell(i))
        if not keys:
            raise refuse(path, f"line {number} has no id and no email: no student can match it")
        ident = next(((header[i], cell(i)) for i in ids if cell(i)), ("", ""))
        students.append(
            Student(
                keys=keys,
                name=next((cell(i) for i in names if cell(i)), ""),
                email=next((cell(i) for i in emails if cell(i)), ""),
                ident=ident,
                columns={h: cell(i) for i, h in canvas},
            )
        )
    if not students:
        raise refuse(path, "no student rows")
    return students


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


def table(
    kind: str, students: list[Student], grades: dict[str, Any], matched: Matched, missing: str
) -> list[list[str]]:
    slugs = sorted(grades["assignments"])
    titles = [grades["assignments"][s]["title"] for s in slugs]
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
        default = "0" if missing == "zero" else ""
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
    out: Path, kind: str, roster: Path, missing: str, leave_out: tuple[str, ...] = ()
) -> Path:
    grades = read_gradebook(out)
    students = read_roster(roster)
    grades = {**grades, "submissions": chosen(grades["submissions"], leave_out, students)}
    matched = match(students, grades["submissions"], sorted(grades["assignments"]))
    if matched.unmatched:
        raise KitError(
            f"{len(matched.unmatched)} submission(s) match no single roster row, so nothing was "
            "exported:\n  " + "\n  ".join(matched.unmatched[:200]),
            f"Add them to {roster} (or fix their ids), then export again.",
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
    files = {target: csv_text(table(kind, students, grades, matched, missing), csv.QUOTE_ALL)}
    if any("late" in r for r in grades["submissions"]):
        files[out / f"export-{kind}-late.csv"] = late_table(students, grades, matched)
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


LATE_HEADER = ["Roster id", "Email", "Student", "Assignment", "Raw score", "Score", "Late",
               "Days late", "Penalty %", "Reason"]  # fmt: skip


def late_table(students: list[Student], grades: dict[str, Any], matched: Matched) -> str:
    """The late policy's decisions beside the export: the platform's columns take only
    the final score (a column Canvas does not know becomes a new assignment there), so
    the raw score and the reason for each graded submission are written here."""
    rows: list[list[Any]] = [LATE_HEADER]
    for record in grades["submissions"]:
        why, row = record.get("late"), matched.rows.get(id(record))
        if not isinstance(why, dict) or row is None:
            continue
        student, title = students[row], grades["assignments"][record["assignment"]]["title"]
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
