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
from dataclasses import dataclass
from pathlib import Path

from attnkit.terminal import one_line

from ..grading.submission import Submission
from .discovery import CANVAS_LATE_NOTE

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


# -- reading the platform's record -----------------------------------------------------------


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
