"""When a submission was handed in, as its platform recorded it: the one reader of
nbgrader's ``timestamp.txt``, Canvas's ``_LATE_`` mark and Gradescope's
``submission_metadata.json`` (see :mod:`.late` for what the late policy does with it).

The time comes only from where a platform writes it, never from a file a student chose to
hand in; whatever those files hold, the result is a time or a problem naming the file and
the line, never an exception.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from attnkit.assignments import ASSIGNMENTS
from attnkit.terminal import one_line

from ..grading.submission import Submission, submission_stem, text_id

MAX_TIMESTAMP_BYTES = 4096
MAX_METADATA_BYTES = 1024 * 1024
UTC = dt.UTC


@dataclass(frozen=True)
class HandIn:
    """When one submission was handed in, as its platform recorded it (all empty: no record).

    ``at`` is ISO 8601, with an offset unless the platform wrote none (the policy's time zone
    then reads it); ``problem`` names the file and line whose time could not be read."""

    at: str = ""
    source: str = ""
    late_mark: bool = False
    problem: str = ""


# -- who, and which assignment: the platform's part of a name ---------------------------------


CANVAS = re.compile(
    r"^(?P<name>[^_]+?)(?P<late>_late)?_(?P<user>\d+)_(?P<sub>\d+)_(?P<file>.*)$",
    re.IGNORECASE | re.DOTALL,  # the student's own file name may hold any character
)


MOODLE = re.compile(r"^(?P<name>.+?)_(?P<number>\d+)_assignsubmission_[a-z]+_?$")


BLACKBOARD = re.compile(
    r"^(?P<title>.+?)_(?P<user>[^_]+)_attempt_(?P<when>\d{4}(?:-\d{2}){5})(?:_(?P<file>.*))?$",
    re.DOTALL,
)
"""Blackboard writes ``<title>_<user>_attempt_<time>`` and then the student's own file name.
The title is matched lazily, so the platform's prefix, the first ``_<user>_attempt_<time>``,
names the student: a file the student called ``x_jdoe_attempt_2099-...`` names no one."""


CANVAS_LATE_NOTE = "Canvas marked this submission LATE"
"""The note on a file whose Canvas prefix holds ``_LATE_``: the late policy reads it."""


COPY_MARKERS = re.compile(r"copy of|\bcopy\b|[-_ ]copy$|\(\d+\)|colab", re.I)


def slug_in(names: tuple[str, ...]) -> str | None:
    for name in reversed(names):
        for slug in ASSIGNMENTS:
            if slug in name:
                return slug
    return None


@dataclass(frozen=True)
class Assignment:
    """Which assignment a file is, as the layout says: the instructor's ``--assignment``
    (``forced``), else the folder nbgrader collected it into, else its own name and
    folders. nbgrader's folder decides: a file there whose own name says another assignment
    is refused (:meth:`disagreement`), never recorded under the other one."""

    forced: str | None = None
    nbgrader: bool = False
    """The root is nbgrader's ``submitted/``: ``<student>/<assignment>/...``."""
    folder: str | None = None
    """The assignment folder nbgrader collected the file into."""

    def below(self, name: str, depth: int) -> Assignment | None:
        """The rule inside the folder ``name``, ``depth`` folders below a student's; None
        when the folder is another assignment's than the one asked for (skipped)."""
        named = slug_in((name,))
        if self.forced and named not in (None, self.forced):
            return None
        if depth == 0 and self.nbgrader and name in ASSIGNMENTS:
            return replace(self, folder=name)
        return self

    def of(self, path: Path, folder_parts: tuple[str, ...]) -> str | None:
        return self.forced or self.folder or slug_in((*folder_parts, path.name))

    @property
    def by_folder(self) -> bool:
        return self.folder is not None and self.forced is None

    def disagreement(self, path: Path) -> str | None:
        """Why a file in nbgrader's folder of one assignment is not graded: its own name
        says another (None when it does not)."""
        named = slug_in((path.name,))
        if not self.by_folder or named in (None, self.folder):
            return None
        return (
            f"{path.name} was collected into nbgrader's folder of {self.folder}, but its name "
            f"says {named}: it is not graded as either. Hand in the {self.folder} notebook "
            "(nbgrader's folder decides the assignment)"
        )


@dataclass(frozen=True)
class Identity:
    """Who a file or folder is, as the platform's part of its name says."""

    student: str
    rule: str
    """Which naming convention gave the id: canvas, moodle, blackboard, file name, folder."""
    lms_number: str = ""
    """The LMS's own number for the student: tells apart two students with the same name."""
    attempt: str = ""
    """Sortable: Blackboard's attempt time, or Canvas's upload number (the later wins)."""
    notes: tuple[str, ...] = ()
    """What the platform marked: :data:`CANVAS_LATE_NOTE`."""


def identify_name(stem: str) -> Identity | None:
    """The identity an LMS's prefix gives a name (Canvas, Blackboard), or None."""
    canvas = CANVAS.match(stem)
    if canvas:
        notes = (CANVAS_LATE_NOTE,) if canvas["late"] else ()
        attempt = f"upload {int(canvas['sub']):020d}"
        return Identity(canvas["name"], "canvas", canvas["user"], attempt, notes)
    blackboard = BLACKBOARD.match(stem)
    if blackboard:
        return Identity(blackboard["user"], "blackboard", attempt=blackboard["when"])
    return None


def identify_file(name: str, slug: str | None) -> Identity:
    """Who a file directly in the root folder is.

    Canvas names files ``name_12345_67890_original.ipynb`` (``name_LATE_...`` when late);
    Blackboard ``Title_username_attempt_2024-03-01-10-00-00_original.ipynb``. Any other name
    is ``<student>_<assignment>.ipynb`` or ``<student>.ipynb``: the id is what remains once
    the assignment is taken out.
    """
    stem = text_id(submission_stem(Path(name)))
    named = identify_name(stem)
    if named is not None:
        return named
    student = stem.replace(slug, "") if slug else stem
    student = re.sub(r"^[\s_.-]+|[\s_.-]+$", "", student)
    return Identity(student or stem, "file name")


def identify_folder(name: str) -> Identity:
    """Who a folder directly in the root folder is: Moodle's folder per participant, an
    upload the kit unpacked under its LMS name (Canvas, Blackboard), or a student's folder."""
    name = text_id(name)
    moodle = MOODLE.match(name)
    if moodle:
        return Identity(moodle["name"], "moodle", moodle["number"])
    return identify_name(name) or Identity(name, "student folder")


# -- when: reading the platform's record -----------------------------------------------------------


EARLIEST, LATEST = 1971, 2199
"""The years a time may be written in: anything else is a typo or a forgery. A day inside
them is a valid instant in every time zone, and no extension can take it past Python's."""
ZONE_NAME = re.compile(r"\s+([A-Za-z]{2,5})$")
UNIVERSAL = ("UTC", "GMT", "Z")


def parse_time(text: str) -> dt.datetime:
    """A time as nbgrader (``2026-11-20 23:59:59.123456 UTC``), Gradescope (ISO 8601 with an
    offset) or a person (``2026-11-20 23:59``, ``...Z``) writes it; ValueError otherwise.
    A zone name other than UTC (nbgrader's own ``... PST``) is left for :func:`read_stored`
    to check against the policy's zone: the time comes back without an offset."""
    text = text.strip()
    if len(text) > 64:
        raise ValueError("too long for a time")
    named = ZONE_NAME.search(text)
    if named:
        text = text[: named.start()]
    moment = dt.datetime.fromisoformat(text)
    if named and moment.tzinfo is not None:
        raise ValueError(f"it has both an offset and a zone name ({named[1]})")
    if named and named[1].upper() in UNIVERSAL:
        moment = moment.replace(tzinfo=UTC)
    if not EARLIEST <= moment.year <= LATEST:
        raise ValueError(f"the year {moment.year} is not between {EARLIEST} and {LATEST}")
    return moment


def zone_name(text: str) -> str:
    """The zone name a time was written with (``PST``), or "" (none, or UTC)."""
    named = ZONE_NAME.search(text.strip())
    return "" if named is None or named[1].upper() in UNIVERSAL else named[1]


def iso(moment: dt.datetime) -> str:
    return (moment.astimezone(UTC) if moment.tzinfo else moment).isoformat()


def stored(text: str) -> str:
    """A platform's time as a HandIn keeps it: ISO 8601 (in UTC when it has an offset), and
    a zone name it was written with, for the policy to check."""
    name = zone_name(text)
    return iso(parse_time(text)) + (f" {name}" if name else "")


def read_stored(text: str, zone: dt.tzinfo) -> dt.datetime:
    """A time :func:`stored` (or a policy) wrote, as an instant: without an offset, in
    ``zone``; written with a zone name, only if ``zone`` has that name then (else
    ValueError: nbgrader and the policy disagree on the zone)."""
    name = zone_name(text)
    base = text.strip()[: -len(name)].strip() if name else text.strip()
    moment = dt.datetime.fromisoformat(base)
    if moment.tzinfo is not None:
        return moment
    local = moment.replace(tzinfo=zone)
    if name and local.tzname() != name:
        raise ValueError(
            f"the time {base} is marked {name}, but the policy's time zone says "
            f"{local.tzname()} then: set timezone in the policy to nbgrader's"
        )
    return local


def read_timestamp(path: Path) -> HandIn:
    """nbgrader's timestamp.txt: one line holding a time. Whatever the file holds, a HandIn:
    an unreadable one says which file and line, and why."""
    source = "nbgrader timestamp.txt"
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TIMESTAMP_BYTES:
            why = "not a small regular file"
            return HandIn(source=source, problem=f"{one_line(str(path))} line 1: {why}")
        with open(path, "rb") as handle:
            data = handle.read(MAX_TIMESTAMP_BYTES + 1)
    except OSError as exc:
        return HandIn(source=source, problem=f"{one_line(str(path))}: {exc.strerror}")
    lines = data.decode("utf-8", "replace").splitlines() or [""]
    filled = [n for n, line in enumerate(lines, 1) if line.strip()]
    line_no = filled[0] if filled else 1
    if len(filled) > 1:
        why = f"a second time on line {filled[1]}"
        return HandIn(source=source, problem=f"{one_line(str(path))} line {filled[1]}: {why}")
    try:
        return HandIn(at=stored(lines[line_no - 1]), source=source)
    except (ValueError, OverflowError) as exc:
        text = one_line(lines[line_no - 1].strip()[:60]) or "nothing"
        why = f"{text!r} is not a time like 2026-11-20 23:59:59.000000 UTC ({exc})"
        return HandIn(source=source, problem=f"{one_line(str(path))} line {line_no}: {why}")


COLLECTED = ".attnkit-hand-in"
"""The folder in nbgrader's ``submitted/`` where the kit's collector keeps, per assignment
(``<slug>.json``), what the LMS's layer said of each student it collected, and the uploads
it refused (see :mod:`attnkit_autograder.platforms.course`)."""
MAX_RECORD_BYTES = 16 * 1024**2


def write_record(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def read_record(path: Path) -> dict[str, Any]:
    """A record the kit wrote (a JSON object), or {} when there is none or it is not one."""
    try:
        if os.lstat(path).st_size > MAX_RECORD_BYTES:
            return {}
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return document if isinstance(document, dict) else {}


def layer_identity(path: Path, root: Path, slug: str | None) -> Identity:
    """Who ``path`` is, by the entry of ``root`` it lies under: the name the LMS wrote."""
    top = path.relative_to(root).parts[0]
    return identify_file(top, slug) if path.parent == root else identify_folder(top)


def attempt_time(who: Identity) -> str:
    """Blackboard's attempt time (``2024-03-02-09-30-00``) as a time, or ""."""
    if who.rule != "blackboard" or len(who.attempt) != 19:
        return ""
    return f"{who.attempt[:10]} {who.attempt[11:].replace('-', ':')}"


def record_collection(
    submitted: Path,
    slug: str,
    extracted: Path,
    collected: list[Submission],
    refused: dict[str, str],
) -> None:
    """Keep what the LMS's layer (the top entries of ``extracted``) said of each collected
    student, and the uploads refused (see :data:`COLLECTED`)."""
    students = {}
    for submission in collected:
        who = layer_identity(submission.path, extracted, slug)
        students[submission.student] = {
            "rule": who.rule,
            "late_mark": CANVAS_LATE_NOTE in who.notes,
            "attempt": attempt_time(who),
            "lms_number": who.lms_number,
        }
    write_record(
        submitted / COLLECTED / f"{slug}.json",
        {"schema": "attnkit-collected/1", "students": students, "refused": refused},
    )


def collected(top: Path, slug: str, student: str) -> HandIn | None:
    """What the kit's collector recorded of ``student``'s hand-in of ``slug`` from the
    LMS's layer, or None when it collected no such file."""
    entry = read_record(top / COLLECTED / f"{slug}.json").get("students", {})
    entry = entry.get(student) if isinstance(entry, dict) else None
    if not isinstance(entry, dict):
        return None
    source = f"{entry.get('rule', 'LMS')} download (nbgrader zip_collect)"
    attempt = str(entry.get("attempt") or "")
    try:
        at = stored(attempt) if attempt else ""
    except (ValueError, OverflowError):
        return HandIn(source=source, problem=f"the attempt time {attempt!r} is not a time")
    return HandIn(at=at, source=source, late_mark=entry.get("late_mark") is True)


def hand_in_of(submission: Submission, root: Path) -> HandIn:
    """The platform's record of when ``submission`` was handed in (see the module's text)."""
    if CANVAS_LATE_NOTE in submission.notes:
        return HandIn(source="Canvas LATE mark", late_mark=True)
    if root.name == "submitted" or (root / "submitted").is_dir():
        top = root if root.name == "submitted" else root / "submitted"
        try:
            parts = submission.path.relative_to(top).parts
        except ValueError:
            return HandIn()
        if len(parts) >= 3:  # <student>/<assignment>/...: nbgrader's own layout
            recorded = collected(top, parts[1], parts[0])
            if recorded is not None:
                return recorded
            stamp = top / parts[0] / parts[1] / "timestamp.txt"
            if os.path.lexists(stamp):
                return read_timestamp(stamp)
            why = "nbgrader writes a timestamp.txt there with every submission, and there is none"
            return HandIn(source="nbgrader timestamp.txt", problem=f"{one_line(str(stamp))}: {why}")
    return HandIn()


def gradescope_hand_in(metadata_path: Path) -> tuple[HandIn, str, tuple[str, ...]]:
    """(the hand-in, Gradescope's due date or "", the submitters' emails and ids) from
    ``submission_metadata.json``, read once and bounded in size."""
    source = "Gradescope submission_metadata.json"
    try:
        if os.path.getsize(metadata_path) > MAX_METADATA_BYTES:
            raise ValueError("too large")
        document = json.loads(metadata_path.read_text(encoding="utf-8"))
        users = document.get("users") if isinstance(document, dict) else None
        users = users if isinstance(users, list) else []
        submitters = tuple(
            str(u.get(k)) for u in users if isinstance(u, dict) for k in ("email", "id")
        )
        at = stored(str(document["created_at"]))
        due = (document.get("assignment") or {}).get("due_date") or ""
        return HandIn(at=at, source=source), stored(str(due)) if due else "", submitters
    except FileNotFoundError:
        return HandIn(), "", ()
    except (
        OSError,
        ValueError,
        OverflowError,
        KeyError,
        TypeError,
        AttributeError,
        RecursionError,
    ) as exc:
        why = f"created_at is missing or not a time ({one_line(str(exc))[:120]})"
        return HandIn(source=source, problem=f"{metadata_path}: {why}"), "", ()
