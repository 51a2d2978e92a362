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
import re
import tomllib
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from attnkit.assignments import ASSIGNMENTS, get_assignment
from attnkit.errors import KitError
from attnkit.terminal import one_line

from .hand_in import (
    EARLIEST,
    LATEST,
    UTC,
    HandIn,
    iso,
    parse_time,
    read_stored,
    zone_name,
)

MAX_POLICY_BYTES = 1024 * 1024
DAY = dt.timedelta(days=1)


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
        """A time this policy or a hand-in stored, read in the policy's zone if it has no
        offset (ValueError when it cannot be; see :func:`.hand_in.read_stored`)."""
        return read_stored(text, self.zone())


SETTINGS = {
    "penalty_per_day": (0.0, 100.0),
    "max_penalty": (0.0, 100.0),
    "grace_minutes": (0.0, 10_080.0),
    "late_mark_days": (0, 365),
}
OF = ("points possible", "score")


class PolicyError(ValueError):
    """One thing wrong with a policy, the key it is about, and the table that holds the key
    (``deadlines``, ``extensions``; empty for ``[late]`` itself)."""

    def __init__(self, key: str, why: str, table: str = "") -> None:
        super().__init__(why)
        self.key, self.why, self.table = key, why, table


def setting(table: dict[str, Any], name: str, default: Any) -> Any:
    value = table.get(name, default)
    if name in SETTINGS:
        low, high = SETTINGS[name]
        integral = isinstance(low, int)
        kinds = (int,) if integral else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise PolicyError(name, f"{name} must be a {'whole ' if integral else ''}number")
        # Compared as they are: a 300-digit integer is out of range, not a float overflow.
        if not (low <= value <= high) or value != value:
            raise PolicyError(name, f"{name} must lie between {low:g} and {high:g}")
        return value if integral else float(value)
    if not isinstance(value, str):
        raise PolicyError(name, f"{name} must be text")
    return value


def time_text(value: Any, key: str, zone: dt.tzinfo, table: str) -> str:
    """A TOML date-time (or a string holding one) as ISO 8601 with its offset."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, str):
        if zone_name(value):
            why = f"write {value.strip()[:60]!r} with an offset (or set timezone), not a zone name"
            raise PolicyError(key, one_line(why), table)
        try:
            moment = parse_time(value)
        except ValueError:
            why = f"{one_line(value[:60])!r} is not a date and time"
            raise PolicyError(key, why, table) from None
    else:
        why = "must be a date and time like 2026-11-20T23:59:00+01:00"
        raise PolicyError(key, why, table)
    if not EARLIEST <= moment.year <= LATEST:
        raise PolicyError(
            key, f"the year {moment.year} is not between {EARLIEST} and {LATEST}", table
        )
    return iso(moment if moment.tzinfo else moment.replace(tzinfo=zone))


def slug_of(name: str, key: str, table: str) -> str:
    if name == "*":
        return name
    try:
        return get_assignment(name).slug
    except KeyError:
        known = ", ".join(ASSIGNMENTS)
        why = f"{one_line(name[:60])!r} is no assignment ({known})"
        raise PolicyError(key, why, table) from None


def by_slug(table: dict[str, Any], key: str, section: str, read: Any) -> dict[str, Any]:
    """``table``'s values by assignment slug; one assignment named twice (``2`` and
    ``02_self_attention``) is refused rather than one of the two dropped."""
    found: dict[str, Any] = {}
    for name, value in table.items():
        slug = slug_of(name, key if key else name, section)
        if slug in found:
            raise PolicyError(key or name, f"{slug} is named twice", section)
        found[slug] = read(value, key or name)
    return found


def extension_value(value: Any, key: str, zone: dt.tzinfo) -> float | str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        if not (0 <= value <= 365):  # NaN compares false; a huge integer is out of range
            why = "an extension in days must lie between 0 and 365"
            raise PolicyError(key, why, "extensions")
        return float(value)
    return time_text(value, key, zone, "extensions")


def read_extensions(table: Any, zone: dt.tzinfo) -> dict[str, dict[str, Any]]:
    if not isinstance(table, dict):
        raise PolicyError("extensions", "[late.extensions] must be a table")
    extensions: dict[str, dict[str, Any]] = {}
    for student, value in table.items():
        # Ids compared in one Unicode form: a folder named zoë matches an extension for zoë
        # however either was typed.
        name = unicodedata.normalize("NFC", student).strip()
        if name.casefold() in {known.casefold() for known in extensions}:
            raise PolicyError(student, f"{one_line(student[:60])!r} is named twice", "extensions")
        if isinstance(value, dict):
            extensions[name] = by_slug(
                value, student, "extensions", lambda v, k: extension_value(v, k, zone)
            )
        else:
            extensions[name] = {"*": extension_value(value, student, zone)}
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
    if not isinstance(deadlines, dict) or not all(isinstance(k, str) for k in deadlines):
        raise PolicyError("deadlines", "[late.deadlines] must be a table")
    return LatePolicy(
        penalty_per_day=setting(table, "penalty_per_day", 0.0),
        max_penalty=setting(table, "max_penalty", 100.0),
        of=of,
        grace_minutes=setting(table, "grace_minutes", 0.0),
        late_mark_days=setting(table, "late_mark_days", 1),
        timezone=zone_name,
        deadlines=by_slug(
            deadlines, "", "deadlines", lambda v, k: time_text(v, k, zone, "deadlines")
        ),
        extensions=read_extensions(table.get("extensions", {}), zone),
    )


def line_of(text: str, key: str, table: str = "") -> int:
    """The line of ``text`` where ``key`` is set in ``[late.<table>]`` (or ``[late]``), else
    its first mention anywhere, else 1."""
    pattern = re.compile(rf"^\s*(\[.*\b{re.escape(key)}\b.*\]|[\"']?{re.escape(key)}[\"']?\s*=)")
    header = re.compile(r"^\s*\[([^\]]*)\]")
    lines = text.splitlines()
    wanted = f"late.{table}" if table else "late"
    section = ""
    for number, line in enumerate(lines, 1):
        if found := header.match(line):
            section = found[1].strip().replace(" ", "")
        elif section == wanted and pattern.search(line):
            return number
    return next((n for n, line in enumerate(lines, 1) if pattern.search(line)), 1)


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
        raise KitError(
            f"{path} line {line_of(text, exc.key, exc.table)}: {exc.why}.", hint
        ) from None


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
    extension = policy.extensions.get(unicodedata.normalize("NFC", student).strip(), {})
    value = extension.get(slug, extension.get("*"))
    if isinstance(value, str):
        return policy.moment(value), f"an extension to {value}"
    if not base_text:
        return None, ""
    base = policy.moment(base_text)
    if value is None:
        return base, ""
    # Days on the course's clock: an extension across a change of summer time keeps the
    # deadline's hour of day.
    local = base.astimezone(policy.zone()).replace(tzinfo=None) + dt.timedelta(days=value)
    # fold=1: an hour that the clocks go through twice ends at the later of the two.
    return local.replace(tzinfo=policy.zone(), fold=1), f"an extension of {value:g} day(s)"


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
    ``no deadline``, ``no time recorded`` or ``unreadable time``. Whatever the stored
    times hold, a verdict: one that cannot be read is an unreadable time."""
    try:
        return judged(policy, hand_in, student, slug, platform_due)
    except (ValueError, OverflowError) as exc:
        why = f"its submission time or deadline cannot be read ({one_line(str(exc))[:200]})"
        return "unreadable time", 0, why + "; no penalty was applied"


def judged(
    policy: LatePolicy, hand_in: HandIn, student: str, slug: str, platform_due: str
) -> tuple[str, int, str]:
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
    status, days, why = judge(
        policy, hand_in, record["student"], record["assignment"], platform_due
    )
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
    handed_in = {unicodedata.normalize("NFC", s) for s in students}
    return sorted(s for s in policy.extensions if s not in handed_in)


def gradebook_adjuster(
    manifest: Any, out: Path
) -> Callable[[Path, dict[str, Any]], dict[str, Any]] | None:
    """What the gradebook writer applies to each result of ``manifest``'s class (a
    :class:`~attnkit_autograder.classes.run_manifest.ClassManifest`) under OUT: the class's late
    policy, by each result's path; None when the class has no policy."""
    table = manifest.options.late_policy
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
