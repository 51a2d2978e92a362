"""The outcome of one check, in one vocabulary.

A visible check in the notebook, a hidden test in the grader and a graded cell in
``grades.json`` all report an :class:`Outcome` with one of these statuses:

* ``passed``; ``failed`` (wrong values, shape, dtype ...); ``forbidden`` (a library call the
  exercise asks you to write yourself, seen at run time); ``error`` (the code raised);
  ``timeout`` (it ran out of time);
* ``not implemented`` and ``missing``: the self-check's way of saying "not started yet" and
  "not defined". The grader scores them as ``failed`` and ``error``;
* ``internal``: the grader itself failed. Never scored as the student's mistake.
"""

from __future__ import annotations

from dataclasses import dataclass

PASSED, FAILED, FORBIDDEN, ERROR, TIMEOUT = "passed", "failed", "forbidden", "error", "timeout"
NOT_IMPLEMENTED, MISSING = "not implemented", "missing"
INTERNAL = "internal"
FAILING = (FAILED, FORBIDDEN, ERROR, TIMEOUT)
"""Statuses that mean the code was there and did something wrong."""


@dataclass(frozen=True)
class Outcome:
    exercise: str
    """The exercise checked (empty where the check names no single exercise)."""
    check: str
    """What was checked: a visible check's description, or a hidden test's name."""
    status: str
    message: str = ""
    hint: str | None = None
    diagnosis: str | None = None
    """The classic mistake the failure matches, if any (its title)."""
    grade_id: str = ""
    """The graded cell a hidden test counts for (hidden tests only)."""
    mistake: str | None = None
    """The id of the classic mistake named in ``diagnosis`` (the self-check's only)."""
