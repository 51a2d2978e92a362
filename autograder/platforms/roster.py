"""Reading a course roster: the platform's own list of students, as a CSV file.

Canvas's gradebook export, Moodle's participants or grades export, Gradescope's roster or
grades export, or any CSV with an id or email column. Spreadsheets save it in many ways:
separated by commas, by semicolons (Excel in a locale whose decimal mark is a comma), or by
tabs (Excel's "Unicode text", UTF-16); with or without a byte-order mark; with Excel's
``sep=;`` first line; with quoted headers. Each is read; anything else is refused with the
line and what was expected there.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from attnkit.errors import KitError

MAX_ROSTER_BYTES = 16 * 1024 * 1024
MAX_COLUMNS, MAX_ROWS = 1_000, 200_000
SEPARATORS = (",", ";", "\t")

ID_COLUMNS = ("sis login id", "login id", "username", "id", "sis user id", "student id", "sid",
              "id number", "user id")  # fmt: skip
EMAIL_COLUMNS = ("email", "email address", "e-mail")
NAME_COLUMNS = ("student", "name", "full name", "student name")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
SPLIT_NAME = ("first name", "last name", "surname")
EXPECTED = (
    "a CSV file (separated by commas, semicolons or tabs) whose first line names its "
    "columns, one of them an id (SIS Login ID, ID, Username, SID, ID number, ...) or an email"
)


@dataclass(frozen=True)
class Student:
    """One roster row: the keys a submission's id may match, and what the export copies."""

    keys: frozenset[str]
    name: str
    email: str
    ident: tuple[str, str]
    """The row's first id, as (column, value), exactly as the roster has it."""
    columns: dict[str, str]
    """The row's Canvas columns (Student, ID, SIS User ID, SIS Login ID, Section)."""
    cells: dict[str, str]
    """Every cell of the row, by its column's header."""


@dataclass(frozen=True)
class Roster:
    """A roster file: its header, its students, and Canvas's "Points Possible" row."""

    path: Path
    header: list[str]
    students: list[Student]
    points: dict[str, str]
    """Canvas's "Points Possible" row, by column (empty for other rosters)."""


def refuse(path: Path, why: str) -> KitError:
    return KitError(
        f"{path} is not a roster the kit can read ({why}).",
        f"Give the platform's student list as {EXPECTED}.",
    )


def key(text: str) -> str:
    """How ids and emails are compared: case aside, nothing else folded or stripped."""
    return text.lower()


def decoded(path: Path, data: bytes) -> str:
    """The roster's text: UTF-16 when it starts with its byte-order mark (Excel's "Unicode
    text"), else UTF-8 with or without one."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            raise refuse(path, "it starts like UTF-16 text but is not") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise refuse(path, f"line {line} is not UTF-8 text") from None


def separator(text: str) -> tuple[str, str]:
    """(the separator, the text without Excel's ``sep=X`` line): the one of comma,
    semicolon and tab that splits the header into the most columns (a comma on a tie)."""
    first, _, rest = text.partition("\n")
    hint = first.strip().strip('"')
    if hint.lower().startswith("sep=") and len(hint) == 5:
        return hint[4], rest
    widths = {}
    for candidate in SEPARATORS:
        try:
            widths[candidate] = len(next(csv.reader([first], delimiter=candidate), []))
        except csv.Error:
            widths[candidate] = 0
    return max(SEPARATORS, key=lambda c: widths[c]), text


def roster_rows(path: Path, data: bytes) -> list[tuple[int, list[str]]]:
    """The roster file's CSV rows, each with the line it ends on, or a refusal naming the
    line that is not CSV text."""
    text = decoded(path, data)
    if "\0" in text:
        raise refuse(path, f"line {text[: text.index(chr(0))].count(chr(10)) + 1} holds a NUL byte")
    delimiter, text = separator(text)
    rows: list[list[str]] = []
    lines: list[int] = []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
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


def read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise refuse(path, "not a regular file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_ROSTER_BYTES + 1)
    except OSError as exc:
        raise refuse(path, exc.strerror or str(exc)) from None
    if len(data) > MAX_ROSTER_BYTES:
        raise refuse(path, "over 16 MiB")
    return data


def header_columns(path: Path, header: list[str]) -> tuple[list[int], list[int], list[int]]:
    """The header's (id, email, name) columns, ids in order of preference, or a refusal
    that quotes the header and says what was expected."""
    lower = [h.lower() for h in header]
    ids = sorted(
        (i for i, h in enumerate(lower) if h in ID_COLUMNS),
        key=lambda i: ID_COLUMNS.index(lower[i]),
    )
    emails = [i for i, h in enumerate(lower) if h in EMAIL_COLUMNS]
    names = [i for i, h in enumerate(lower) if h in NAME_COLUMNS]
    if not ids and not emails:
        columns = ", ".join(map(repr, header[:20]))
        raise refuse(
            path,
            f"line 1, the header, has no id or email column among {columns}; expected a "
            "column named SIS Login ID, ID, Username, SID, Student ID, ID number, User ID "
            "or Email",
        )
    return ids, emails, names


def read_table(path: Path) -> Roster:
    """The roster, or one KitError that says what is wrong with the file."""
    rows = roster_rows(path, read_bytes(path))
    if not rows:
        raise refuse(path, "empty")
    header = [h.strip() for h in rows[0][1]]
    ids, emails, names = header_columns(path, header)
    students: list[Student] = []
    points: dict[str, str] = {}
    for number, row in rows[1:]:
        cells = [c.strip() for c in row]
        if not any(cells):
            continue  # a blank line
        if cells[0].lower() == "points possible":  # Canvas's row under the header
            points = dict(zip(header, cells, strict=False))
            continue
        filled = len(row) - next((i for i, c in enumerate(reversed(row)) if c.strip()), 0)
        if filled > len(header) or len(row) < len(header):
            # More cells than the header (trailing empty ones aside), or fewer: a separator
            # that lost its quotes, or a cell lost; either way the columns would shift.
            why = f"{len(row)} cells under a header of {len(header)}"
            raise refuse(path, f"line {number} has {why} (a separator that lost its quotes?)")
        if cells == header:
            raise refuse(path, f"line {number} repeats the header")
        students.append(student_of(path, number, header, cells, (ids, emails, names)))
    if not students:
        raise refuse(path, "no student rows")
    return Roster(path, header, students, points)


def student_of(
    path: Path,
    number: int,
    header: list[str],
    cells: list[str],
    columns: tuple[list[int], list[int], list[int]],
) -> Student:
    """The student of the roster's line ``number`` (its stripped ``cells``)."""
    ids, emails, names = columns

    def cell(i: int) -> str:
        return cells[i] if i < len(cells) else ""

    keys = frozenset(key(cell(i)) for i in ids + emails if cell(i))
    if not keys:
        raise refuse(path, f"line {number} has no id and no email: no student can match it")
    lower = [h.lower() for h in header]
    # Moodle and Gradescope split the name: "First name" and "Last name" (or "Surname").
    parts = [cell(lower.index(h)) for h in SPLIT_NAME if h in lower]
    return Student(
        keys=keys,
        name=next((cell(i) for i in names if cell(i)), " ".join(p for p in parts if p)),
        email=next((cell(i) for i in emails if cell(i)), ""),
        ident=next(((header[i], cell(i)) for i in ids if cell(i)), ("", "")),
        columns={h: cell(i) for i, h in enumerate(header) if h in CANVAS_COLUMNS},
        cells={h: cell(i) for i, h in enumerate(header)},
    )


def read_roster(path: Path) -> list[Student]:
    """The roster's students (see :func:`read_table`)."""
    return read_table(path).students
