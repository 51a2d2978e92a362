"""What a result says besides points: the classic mistake behind a failing exercise, the
cell error that is the real cause, and the instructor's notes from reading the code."""

from __future__ import annotations

import re
from typing import Any

from attnkit.assignments import ASSIGNMENTS
from attnkit.diagnosis import failing_helpers, fix_helpers_first, quiet
from attnkit.notebook_code import Cell, first_line
from attnkit.notebook_run import CellOutcome
from attnkit.outcome import ERROR, FAILED, FORBIDDEN, PASSED, TIMEOUT

from .catalogue import diagnose
from .records import CellEntry
from .scan import readable, scan_source, tampering

PARSE_ERRORS = ("SyntaxError", "IndentationError", "TabError")
"""What a cell raises when Python itself cannot read it (no note: the cell's own says so)."""
SCAN_CELL_CHARS = 64_000
SCAN_TOTAL_CHARS = 256_000
"""The scan runs in the grader, outside every budget: it reads at most this much code (a
few seconds), and says which cells it left unread, which is itself worth a look."""


def scanned_cells(cells: list[Cell]) -> tuple[list[Cell], list[str]]:
    """The cells the scan reads, within SCAN_CELL_CHARS each and SCAN_TOTAL_CHARS in all,
    and a note for each cell it leaves unread."""
    chosen, notes, total = [], [], 0
    for cell in cells:
        size = len(cell.source)
        if size > SCAN_CELL_CHARS or total + size > SCAN_TOTAL_CHARS:
            notes.append(
                f"code cell {cell.index}: {size // 1000} thousand characters of code, more than "
                "the scan for forbidden names and tampering reads (for the instructor: "
                "read it yourself)"
            )
            continue
        chosen.append(cell)
        total += size
    return chosen, notes


def static_notes(
    slug: str, cells: list[Cell], failures: dict[int, CellOutcome] | None = None
) -> list[str]:
    """Notes for the instructor from reading the code: never a verdict, never a point lost.

    Forbidden names that appear in the source (the runtime recorder decides whether they
    were called by an exercise), code that reaches into the grader's machinery, and cells
    that ran but that the scan could not read (``failures``: what each cell raised).
    """
    forbidden = sorted({call for e in ASSIGNMENTS[slug].exercises for call in e.forbidden})
    cells, notes = scanned_cells(cells)
    for cell in cells:
        failed = (failures or {}).get(cell.index)
        unparsable = failed is not None and failed.error_type in PARSE_ERRORS
        if not readable(cell.source) and not unparsable:
            notes.append(
                f"code cell {cell.index} ran, but the scan for forbidden names and tampering "
                "could not read it (for the instructor: read it yourself)"
            )
    for cell in cells:
        for line, call in scan_source(cell.source, forbidden):
            notes.append(
                f"code cell {cell.index}, line {line}: mentions {call} (for the instructor: "
                "only a call made while an exercise runs costs points)"
            )
    for finding in tampering((c.index, c.source) for c in cells):
        notes.append(f"{finding.note()} (for the instructor: this code reaches into the grader)")
    return notes


def explain_failures(slug: str, tests: list[CellEntry], calls: dict[str, list]) -> None:
    """Name the classic mistake behind each failing exercise, in dependency order.

    An exercise whose helpers (``Exercise.uses``) fail is told to fix them first and gets
    no name: its mistakes are built on correct helpers, so they cannot explain it. Passing
    cells are never annotated; a name is given only when the evidence singles it out
    (see attnkit.diagnosis).
    """
    from attnkit_solutions.exercises import reference_namespace

    explained = (FAILED, ERROR, FORBIDDEN)
    failing = {t["exercise"] for t in tests if t["status"] in explained}
    base = reference_namespace(slug)
    found: dict[str, Any] = {}
    for test in tests:
        exercise = test["exercise"]
        if test["status"] not in explained:
            continue
        helpers = failing_helpers(slug, exercise, failing)
        if helpers and not test["message"].startswith(f"{exercise} is not defined"):
            # An exercise that is not even defined fails whatever its helpers do: "fix the
            # helper first" would point the student at the wrong cell.
            test["hint"] = fix_helpers_first(exercise, helpers)
            continue
        if exercise not in found:
            with quiet():  # the wrong variants overflow and divide by zero on purpose
                found[exercise] = diagnose(slug, exercise, calls.get(exercise, []), base)
        mistake = found[exercise]
        if mistake is not None:
            test["diagnosis"] = {
                "id": mistake.id,
                "title": mistake.title,
                "symptom": mistake.symptom,
            }
            test["hint"] = mistake.hint


IPYTHON_INPUT = re.compile(r"\s*\(<ipython-input-[^>]*>, line \d+\)")


def defines(source: str, name: str) -> bool:
    """Whether ``source`` holds ``def name`` or ``class name`` (read as text, so a cell that
    does not even parse still says what it meant to define)."""
    return (
        re.search(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b", source, re.M)
        is not None
    )


def lead_with_cell_errors(
    tests: list[CellEntry], cells: list[Cell], failures: dict[int, Any]
) -> None:
    """Say the real cause first: a failing exercise whose own cell raised (a SyntaxError, a
    NameError at definition time) leads with that cell's error, and gets no hint or mistake
    name that the tests' later symptoms ("is not defined") would suggest."""
    for test in tests:
        if test["status"] == PASSED:
            continue
        for cell in cells:
            failure = failures.get(cell.index)
            if failure is None or not defines(cell.source, test["exercise"]):
                continue
            at = f" at line {failure.line}" if failure.line else ""
            said = IPYTHON_INPUT.sub("", failure.message)  # the line is given already
            what = (
                f"ran out of its time{at}"
                if failure.status == "timeout"
                else f"raised {failure.error_type}{at}: {said}"
            )
            start = first_line(cell.source, 50)
            test["message"] = (
                f"the cell that defines {test['exercise']} (it starts `{start}`) "
                f"{what}. Fix that cell first: the tests then saw: {test['message']}"
            )
            test["hint"], test["diagnosis"] = None, None
            break


def one_cause_for_timeouts(slug: str, tests: list[CellEntry]) -> None:
    """A call that ran out of time inside another exercise's call is the looping exercise's
    to report: when exercises that use ``softmax`` ran out of time and ``softmax``'s own
    cell did too, they say "not run: your `softmax` did not return", and only ``softmax``'s
    cell says to look for a loop that never ends."""
    if slug not in ASSIGNMENTS:
        return
    assignment = ASSIGNMENTS[slug]
    timed_out = {t["exercise"] for t in tests if t["status"] == TIMEOUT}
    for test in tests:
        if test["status"] != TIMEOUT:
            continue
        used = [n for n in timed_out if test["exercise"] in assignment.dependents(n)]
        # The deepest of them: the one that uses none of the others.
        first = [n for n in used if not any(n in assignment.dependents(m) for m in used)]
        if first:
            test["message"] = f"not run: your `{sorted(first)[0]}` did not return"
            test["hint"], test["diagnosis"] = None, None
