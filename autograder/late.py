"""When a submission was handed in, and what the course's late policy takes off for it.

The time comes only from where a platform writes it, never from a file the student chose:

* nbgrader: ``submitted/<student>/<assignment>/timestamp.txt``, which ``nbgrader collect``
  (or ``zip_collect``) writes beside the notebook;
* Canvas: the ``_LATE_`` mark in the prefix of a download's name (Canvas records no time
  there, so the policy says how many days such a file counts as);
* Gradescope: ``/autograder/submission_metadata.json`` (``created_at``), read by
  ``run_autograder``, outside the student's upload.

A file named ``timestamp.txt`` that a student put anywhere else is an ordinary file.

The policy is a TOML file (``attnkit grade --late-policy course.toml``)::

    [late]
    penalty_per_day = 10        # percent taken off per day late, or part of a day
    max_penalty = 50            # the most a late submission loses, in percent (default 100)
    of = "points possible"      # or "score": what the percentages are of
    grace_minutes = 10          # default 0
    late_mark_days = 1          # a Canvas LATE mark, which has no time (default 1)
    timezone = "UTC"            # for times written without an offset (an IANA name)

    [late.deadlines]
    02_self_attention = 2026-11-20T23:59:00+01:00

    [late.extensions]
    jdoe = 2                                          # days, on every assignment
    li_wei = { 02_self_attention = "2026-11-23 23:59" }  # a deadline of their own

The gradebook keeps both scores: ``raw_score`` (what the tests gave) and ``score`` (after the
policy), with ``late`` saying why. The policy never changes a result file, so a new policy
(an extension granted) rewrites the gradebook without grading anything again.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import stat
import tomllib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from attnkit.assignments import ASSIGNMENTS, get_assignment
from attnkit.errors import KitError
from attnkit.terminal import one_line

from .discovery import CANVAS_LATE_NOTE, Submission

MAX_TIMESTAMP_BYTES = 4096
MAX_POLICY_BYTES = 1024 * 1024
DAY = dt.timedelta(days=1)
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


def parse_time(text: str) -> dt.datetime:
    """A time as nbgrader (``2026-11-20 23:59:59.123456 UTC``), Gradescope (ISO 8601 with an
    offset) or a person (``2026-11-20 23:59``, ``...Z``) writes it; ValueError otherwise."""
    text = text.strip()
    if text.endswith((" UTC", " GMT")):
        return dt.datetime.fromisoformat(text[:-4].strip()).replace(tzinfo=UTC)
    if len(text) > 64:
        raise ValueError("too long for a time")
    return dt.datetime.fromisoformat(text)


def iso(moment: dt.datetime) -> str:
    return (moment.astimezone(UTC) if moment.tzinfo else moment).isoformat()


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
        return HandIn(at=iso(parse_time(lines[line_no - 1])), source=source)
    except ValueError:
        text = one_line(lines[line_no - 1].strip()[:60]) or "nothing"
        why = f"{text!r} is not a time like 2026-11-20 23:59:59.000000 UTC"
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
        if len(parts) == 3:  # <student>/<assignment>/<notebook>: nbgrader's own layout
            stamp = submission.path.parent / "timestamp.txt"
            if os.path.lexists(stamp):
                return read_timestamp(stamp)
    return HandIn()


def gradescope_hand_in(metadata_path: Path) -> tuple[HandIn, str]:
    """(the hand-in, Gradescope's due date or "") from ``submission_metadata.json``."""
    import json

    source = "Gradescope submission_metadata.json"
    try:
        if os.path.getsize(metadata_path) > MAX_POLICY_BYTES:
            raise ValueError("too large")
        document = json.loads(metadata_path.read_text(encoding="utf-8"))
        at = iso(parse_time(str(document["created_at"])))
        due = (document.get("assignment") or {}).get("due_date") or ""
        return HandIn(at=at, source=source), iso(parse_time(due)) if due else ""
    except FileNotFoundError:
        return HandIn(), ""
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        why = f"created_at is missing or not a time ({one_line(str(exc))[:120]})"
        return HandIn(source=source, problem=f"{metadata_path}: {why}"), ""


# -- the policy --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatePolicy:
    """A course's late policy (see the module's text), every time as ISO 8601."""

    penalty_per_day: float
    max_penalty: float = 100.0
    of: str = "points possible"
    grace_minutes: float = 0.0
    late_mark_days: int = 1
    timezone: str = "UTC"
    deadlines: dict[str, str] = field(default_factory=dict)
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per student id, per assignment slug (``*``: every one): days (a number) or a deadline."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def zone(self) -> dt.tzinfo:
        return ZoneInfo(self.timezone)

    def moment(self, text: str) -> dt.datetime:
        """An ISO time of this policy or a hand-in, read in the policy's zone if it has none."""
        moment = parse_time(text)
        return moment if moment.tzinfo else moment.replace(tzinfo=self.zone())


SETTINGS = {
    "penalty_per_day": (0.0, 100.0),
    "max_penalty": (0.0, 100.0),
    "grace_minutes": (0.0, 10_080.0),
    "late_mark_days": (0, 365),
}
OF = ("points possible", "score")


class PolicyError(ValueError):
    """One thing wrong with a policy, and the key (or TOML key path) it is about."""

    def __init__(self, key: str, why: str) -> None:
        super().__init__(why)
        self.key, self.why = key, why


def setting(table: dict[str, Any], name: str, default: Any) -> Any:
    value = table.get(name, default)
    if name in SETTINGS:
        low, high = SETTINGS[name]
        integral = isinstance(low, int)
        kinds = (int,) if integral else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise PolicyError(name, f"{name} must be a {'whole ' if integral else ''}number")
        if not (math.isfinite(value) and low <= value <= high):
            raise PolicyError(name, f"{name} must lie between {low:g} and {high:g}")
        return value if integral else float(value)
    if not isinstance(value, str):
        raise PolicyError(name, f"{name} must be text")
    return value


def time_text(value: Any, key: str, zone: dt.tzinfo) -> str:
    """A TOML date-time (or a string holding one) as ISO 8601 with its offset."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = parse_time(value)
        except ValueError:
            raise PolicyError(key, f"{one_line(value[:60])!r} is not a date and time") from None
    else:
        raise PolicyError(key, "must be a date and time like 2026-11-20T23:59:00+01:00")
    return iso(moment if moment.tzinfo else moment.replace(tzinfo=zone))


def slug_of(name: str, key: str) -> str:
    try:
        return get_assignment(name).slug
    except KeyError:
        known = ", ".join(ASSIGNMENTS)
        raise PolicyError(key, f"{one_line(name[:60])!r} is no assignment ({known})") from None


def extension_value(value: Any, key: str, zone: dt.tzinfo) -> float | str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not (math.isfinite(value) and 0 <= value <= 365):
            raise PolicyError(key, "an extension in days must lie between 0 and 365")
        return float(value)
    return time_text(value, key, zone)


def read_extensions(table: Any, zone: dt.tzinfo) -> dict[str, dict[str, Any]]:
    if not isinstance(table, dict):
        raise PolicyError("extensions", "[late.extensions] must be a table")
    extensions: dict[str, dict[str, Any]] = {}
    for student, value in table.items():
        if isinstance(value, dict):
            extensions[student] = {
                s if s == "*" else slug_of(s, student): extension_value(v, student, zone)
                for s, v in value.items()
            }
        else:
            extensions[student] = {"*": extension_value(value, student, zone)}
    return extensions


def policy_from_dict(table: Any) -> LatePolicy:
    """A policy from the ``[late]`` table (or from a class.json), or one PolicyError."""
    if not isinstance(table, dict):
        raise PolicyError("late", "the file has no [late] table")
    known = {f.name for f in LatePolicy.__dataclass_fields__.values()}
    unknown = sorted(set(table) - known)
    if unknown:
        raise PolicyError(unknown[0], f"{one_line(unknown[0][:60])!r} is not a policy setting")
    if "penalty_per_day" not in table:
        raise PolicyError("late", "penalty_per_day is missing")
    zone_name = setting(table, "timezone", "UTC")
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise PolicyError("timezone", f"{one_line(zone_name[:60])!r} is no time zone") from None
    of = setting(table, "of", "points possible")
    if of not in OF:
        raise PolicyError("of", f"of must be one of {', '.join(map(repr, OF))}")
    deadlines = table.get("deadlines", {})
    if not isinstance(deadlines, dict):
        raise PolicyError("deadlines", "[late.deadlines] must be a table")
    return LatePolicy(
        penalty_per_day=setting(table, "penalty_per_day", 0.0),
        max_penalty=setting(table, "max_penalty", 100.0),
        of=of,
        grace_minutes=setting(table, "grace_minutes", 0.0),
        late_mark_days=setting(table, "late_mark_days", 1),
        timezone=zone_name,
        deadlines={slug_of(k, k): time_text(v, k, zone) for k, v in deadlines.items()},
        extensions=read_extensions(table.get("extensions", {}), zone),
    )


def line_of(text: str, key: str) -> int:
    """The line of ``text`` where ``key`` is set (its first mention), or 1."""
    pattern = re.compile(rf"^\s*(\[.*\b{re.escape(key)}\b.*\]|[\"']?{re.escape(key)}[\"']?\s*=)")
    for number, line in enumerate(text.splitlines(), 1):
        if pattern.search(line):
            return number
    return 1


def read_policy(path: Path) -> LatePolicy:
    """The policy in the TOML file ``path``, or one KitError naming the file and the line."""
    hint = "Fix the file (docs/grading.md#late-policy shows one) and run the command again."
    text = ""
    try:
        if not path.is_file() or path.stat().st_size > MAX_POLICY_BYTES:
            raise KitError(f"{path} is not a policy file (a TOML file under 1 MiB).", hint)
        text = path.read_bytes().decode("utf-8")
        document = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise KitError(f"{path} cannot be read ({one_line(str(exc))[:200]}).", hint) from None
    except tomllib.TOMLDecodeError as exc:
        # Python 3.11's message ends "(at line 3, column 6)" or "(at end of document)".
        found = re.search(r"\(at line (\d+)", str(exc))
        line = int(found[1]) if found else max(1, len(text.splitlines()))
        why = re.sub(r"\s*\(at [^)]*\)$", "", one_line(str(exc)))
        raise KitError(f"{path} line {line}: {why} (not TOML).", hint) from None
    except RecursionError:
        raise KitError(f"{path} is nested too deeply to be a policy.", hint) from None
    try:
        return policy_from_dict(document.get("late"))
    except PolicyError as exc:
        raise KitError(f"{path} line {line_of(text, exc.key)}: {exc.why}.", hint) from None


def policy_option(value: Any) -> dict[str, Any] | None:
    """The ``late_policy`` grade option as class.json keeps it: the policy itself, so merges
    and regrades apply the very same one. ``value`` is a path (the command line), a policy
    dict (a class.json), or None."""
    if value is None:
        return None
    if isinstance(value, dict):
        return policy_from_dict(value).to_dict()
    return read_policy(Path(value)).to_dict()


# -- the decision ------------------------------------------------------------------------------


def deadline_for(
    policy: LatePolicy, student: str, slug: str, platform_due: str = ""
) -> tuple[dt.datetime | None, str]:
    """(the student's deadline for ``slug``, how an extension set it), or (None, "") when
    neither the policy nor the platform names a deadline."""
    base_text = policy.deadlines.get(slug) or platform_due
    extension = policy.extensions.get(student, {})
    value = extension.get(slug, extension.get("*"))
    if isinstance(value, str):
        return policy.moment(value), f"an extension to {value}"
    if not base_text:
        return None, ""
    base = policy.moment(base_text)
    if value is None:
        return base, ""
    return base + dt.timedelta(days=value), f"an extension of {value:g} day(s)"


def days_late(policy: LatePolicy, hand_in: HandIn, deadline: dt.datetime) -> int:
    """Days late, a started day counting whole; 0 within the grace period."""
    over = policy.moment(hand_in.at) - deadline
    if over <= dt.timedelta(minutes=policy.grace_minutes):
        return 0
    return math.ceil(over / DAY)


def judge(
    policy: LatePolicy, hand_in: HandIn, student: str, slug: str, platform_due: str = ""
) -> tuple[str, int, str]:
    """(status, days late, why) for one submission: the status is ``on time``, ``late``,
    ``no deadline``, ``no time recorded`` or ``unreadable time``."""
    deadline, extension = deadline_for(policy, student, slug, platform_due)
    given = f" ({extension})" if extension else ""
    if hand_in.problem:
        why = f"its submission time cannot be read: {hand_in.problem}; no penalty was applied"
        return "unreadable time", 0, why
    if deadline is None:
        return "no deadline", 0, f"the late policy sets no deadline for {slug}"
    due = f"the deadline {deadline.astimezone(UTC):%Y-%m-%d %H:%M} UTC{given}"
    if hand_in.late_mark:
        if extension:
            why = f"Canvas marked it LATE but records no time, and {student} has {extension}"
            return "no time recorded", 0, why + ": no penalty was applied; check it by hand"
        days = policy.late_mark_days
        return "late", days, f"Canvas marked it LATE (no time recorded): counted as {days} day(s)"
    if not hand_in.at:
        return "no time recorded", 0, "the platform recorded no submission time: no penalty"
    when = f"handed in {policy.moment(hand_in.at).astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    days = days_late(policy, hand_in, deadline)
    if days == 0:
        return "on time", 0, f"{when} ({hand_in.source}), by {due}"
    return "late", days, f"{when} ({hand_in.source}), {days} day(s) after {due}"


def decide(
    policy: LatePolicy,
    hand_in: HandIn,
    record: dict[str, Any],
    platform_due: str = "",
) -> dict[str, Any]:
    """``record`` (a graded result) with the policy applied: ``raw_score`` is what the tests
    gave, ``score`` what is left after the penalty, and ``late`` says why."""
    if record.get("status") != "graded" or not isinstance(record.get("assignment"), str):
        return record
    raw, possible = float(record["score"]), float(record["max_score"])
    status, days, why = judge(policy, hand_in, record["student"], record["assignment"],
                              platform_due)  # fmt: skip
    percent = min(policy.max_penalty, policy.penalty_per_day * days)
    base = possible if policy.of == "points possible" else raw
    final = round(max(0.0, raw - base * percent / 100), 4)
    if percent:
        why += f": -{percent:g}% of the {policy.of} ({raw:g} -> {final:g})"
    late = {
        "status": status,
        "submitted": hand_in.at or None,
        "source": hand_in.source or None,
        "days_late": days,
        "penalty_percent": percent,
        "reason": why,
    }
    return {**record, "raw_score": raw, "score": final, "late": late}


def extensions_for_no_one(policy: LatePolicy, students: set[str]) -> list[str]:
    """The students the policy grants an extension whom no submission names (a typo?)."""
    return sorted(s for s in policy.extensions if s not in students)


def gradebook_adjuster(
    manifest: Any, out: Path
) -> Callable[[Path, dict[str, Any]], dict[str, Any]] | None:
    """What the gradebook writer applies to each result of ``manifest``'s class (a
    :class:`~attnkit_autograder.run_manifest.ClassManifest`) under OUT: the class's late
    policy, by each result's path; None when the class has no policy."""
    table = manifest.options.get("late_policy")
    if table is None:
        return None
    policy = policy_from_dict(table)
    hand_ins = {member.result: member.handed_in for member in manifest.members}

    def adjust(path: Path, record: dict[str, Any]) -> dict[str, Any]:
        try:
            key = path.relative_to(out).as_posix()
        except ValueError:
            key = ""
        return decide(policy, hand_ins.get(key, HandIn()), record)

    return adjust
