"""Which column of the platform an assignment's scores go to.

With a plain student list as roster, a new column titled after the assignment. With the
platform's own gradebook export as roster (Canvas's gradebook, Moodle's grades, Gradescope's
grades), the assignment's existing column: the one ``--column`` names (by its header, its
header without the platform's suffix, or Canvas's assignment id), or the one titled after the
assignment, or a refusal that lists the roster's assignment columns. An existing column's
points possible (Canvas's "Points Possible" row, Gradescope's ``NAME - Max Points``) must be
the kit's maximum: a score of 14 in a column worth 10 would be read as 140%.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from attnkit.errors import KitError
from attnkit.terminal import one_line

from .roster import CANVAS_COLUMNS, Roster

SUFFIX = re.compile(r"\s*\((\d+|Real|Percentage|Letter)\)\s*$", re.IGNORECASE)
"""Canvas's assignment id (``Lab 2 (55501)``), Moodle's display type (``Lab 2 (Real)``)."""
TOTALS = re.compile(r"^(course total|total lateness)\b", re.IGNORECASE)
MAX_POINTS = " - Max Points"


@dataclass(frozen=True)
class Target:
    """An assignment's column in the export: its header, and whether the platform has it."""

    slug: str
    header: str
    existing: bool


def bare(header: str) -> str:
    """A header without the platform's suffix, case aside: ``lab 2`` for ``Lab 2 (55501)``."""
    return SUFFIX.sub("", header).strip().lower()


def assignment_columns(roster: Roster, kind: str) -> list[str]:
    """The roster's columns that hold an assignment's grades: Canvas's columns with points
    possible (its calculated ones say "(read only)"), Moodle's grade items (``... (Real)``)
    but the course total, Gradescope's assignments (each beside its ``- Max Points``)."""
    header = roster.header
    if kind == "canvas":
        return [
            h
            for h in header
            if h not in CANVAS_COLUMNS and points_number(roster.points.get(h, "")) is not None
        ]
    if kind == "moodle":
        return [h for h in header if SUFFIX.search(h) and not TOTALS.match(h)]
    return [h for h in header if h + MAX_POINTS in header]


def points_number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def named(roster: Roster, wanted: str) -> str | None:
    """The roster's column that ``wanted`` names: the header itself, case aside, without its
    suffix, or Canvas's assignment id alone (``55501``)."""
    for match in (
        lambda h: h == wanted,
        lambda h: h.lower() == wanted.lower(),
        lambda h: bare(h) == bare(wanted),
        lambda h: bare(h).endswith(": " + bare(wanted)),  # Moodle's "Assignment: Lab 2 (Real)"
        lambda h: wanted.isdigit() and h.endswith(f"({wanted})"),
    ):
        found = [h for h in roster.header if match(h)]
        if len(found) == 1:
            return found[0]
    return None


def choose(
    roster: Roster, kind: str, slug: str, info: dict[str, Any], wanted: str | None
) -> Target:
    """The column of ``slug`` (whose gradebook entry is ``info``), as explained above."""
    candidates = assignment_columns(roster, kind)
    listed = ", ".join(repr(c) for c in candidates[:30]) or "none"
    if wanted is not None:
        found = named(roster, wanted)
        if found is not None:
            return checked(roster, kind, Target(slug, found, True), info)
        if candidates:
            raise KitError(
                f"--column {one_line(wanted)!r} names no column of {roster.path}; its "
                f"assignment columns are {listed}.",
                "Give one of them (its header, or Canvas's assignment id), as the roster has "
                "it; for a new one, create the assignment on the platform first and export "
                "its gradebook again.",
            )
        return Target(slug, wanted, False)
    names = (info["title"].lower(), slug.lower())
    # Moodle prefixes a grade item with its activity: "Assignment: Lab 2 (Real)".
    titled = [c for c in candidates if bare(c) in names or bare(c).endswith(names)]
    if len(titled) == 1:
        return checked(roster, kind, Target(slug, titled[0], True), info)
    if candidates:
        raise KitError(
            f"{roster.path} has assignment columns ({listed}), and none is titled "
            f"{info['title']!r}: which one is {slug}'s?",
            f"Pass --column NAME (or --column {slug}=NAME), its header or Canvas's "
            "assignment id, so the scores go into that column; for a new one, create the "
            "assignment on the platform first and export its gradebook again.",
        )
    return Target(slug, info["title"], False)


def checked(roster: Roster, kind: str, target: Target, info: dict[str, Any]) -> Target:
    """``target``, refused when the platform says it is worth other points than the kit's
    maximum, or is a column of Canvas's that takes no import."""
    maximum, header = float(info["max_score"]), target.header
    if kind == "canvas" and roster.points:
        text = roster.points.get(header, "")
        possible = points_number(text)
        if possible is None:
            raise KitError(
                f"Canvas's column {header!r} in {roster.path} is not an assignment "
                f"({text or 'no points possible'}): it takes no imported grades.",
                "Name the assignment's own column with --column.",
            )
        stated = {possible}
    elif kind == "gradescope-csv" and header + MAX_POINTS in roster.header:
        cells = {s.cells.get(header + MAX_POINTS, "") for s in roster.students}
        stated = {p for c in cells if (p := points_number(c)) is not None}
    else:
        if kind == "moodle":
            print(
                f"note: Moodle's export does not say what {header!r} is out of: check that "
                f"its maximum grade is {maximum:g}"
            )
        return target
    if stated and stated != {maximum}:
        said = " and ".join(f"{p:g}" for p in sorted(stated))
        raise KitError(
            f"{roster.path} says {header!r} is worth {said} points, and {target.slug} is "
            f"graded out of {maximum:g}: the imported scores would be out of the wrong total.",
            f"Set the assignment's points to {maximum:g} on the platform, export its "
            "gradebook again and use that as the roster.",
        )
    return target


def wanted_columns(given: tuple[str, ...], slugs: list[str]) -> dict[str, str]:
    """``--column`` values by assignment: ``NAME`` when the gradebook holds one assignment,
    ``SLUG=NAME`` (or ``N=NAME``) for any of them."""
    from attnkit.assignments import get_assignment

    chosen: dict[str, str] = {}
    for value in given:
        head, equals, tail = value.partition("=")
        slug = None
        if equals:
            try:
                slug = get_assignment(head.strip()).slug
            except KeyError:
                slug = None
        if slug is None:
            if len(slugs) != 1:
                raise KitError(
                    f"--column {one_line(value)!r}: the gradebook holds {len(slugs)} "
                    "assignments, so say whose column it is.",
                    "Write --column SLUG=NAME, e.g. --column 02_self_attention='Lab 2 (55501)'.",
                )
            slug, tail = slugs[0], value
        if slug not in slugs:
            raise KitError(f"--column {one_line(value)!r}: the gradebook has no {slug}.")
        if slug in chosen:
            raise KitError(f"--column names {slug}'s column twice.")
        chosen[slug] = tail.strip()
    return chosen
