"""From the hidden tests' verdicts to points: one entry per graded cell."""

from __future__ import annotations

from attnkit.outcome import ERROR, FAILED, FORBIDDEN, PASSED, TIMEOUT, Outcome

from ..lessons.rubric import graded_cells
from .records import CellEntry, cell_entry

STATUS_ORDER = {PASSED: 0, FAILED: 1, ERROR: 2, TIMEOUT: 3, FORBIDDEN: 4}
"""Which status a cell shows when several of its tests fail: the most serious."""


def cell_points(points: float, passed: int, total: int, status: str, partial: bool) -> float:
    """A cell's points: all of them when every hidden test of it passed, else none, or with
    ``partial`` credit the share of its tests that passed (rounded to 1/100 of a point); a
    forbidden call earns the cell nothing either way."""
    if status == PASSED:
        return points
    if not partial or status == FORBIDDEN or total == 0:
        return 0.0
    return round(points * passed / total, 2)


def score_cells(slug: str, verdicts: list[Outcome], partial: bool = False) -> list[CellEntry]:
    """One entry per graded cell: full points only when every hidden test of it passed (or,
    with ``partial`` credit, in proportion to those that passed: :func:`cell_points`).

    A forbidden call counts only as the runtime recorder saw it: a ``forbidden`` verdict.
    """
    tests = []
    for cell in graded_cells(slug):
        mine = [v for v in verdicts if v.grade_id == cell.grade_id]
        passed = sum(v.status == PASSED for v in mine)
        worst = max(mine, key=lambda v: STATUS_ORDER[v.status]) if mine else None
        status = PASSED if mine and passed == len(mine) else (worst.status if worst else ERROR)
        failing = [v for v in mine if v.status != PASSED]
        first = failing[0] if failing else None
        tests.append(
            cell_entry(
                cell,
                cell_points(cell.points, passed, len(mine), status, partial),
                status,
                "" if first is None else first.message,
                None if first is None else first.hint,
                passed,
                len(mine),
            )
        )
    return tests


def better_of(first: list[Outcome], second: list[Outcome]) -> list[Outcome]:
    """Per graded cell, the verdicts of whichever run passed more of that cell's tests."""
    chosen = []
    for grade_id in dict.fromkeys(v.grade_id for v in first + second):
        a = [v for v in first if v.grade_id == grade_id]
        b = [v for v in second if v.grade_id == grade_id]
        passes = [sum(v.status == PASSED for v in a), sum(v.status == PASSED for v in b)]
        chosen += b if b and passes[1] > passes[0] else a
    return chosen
