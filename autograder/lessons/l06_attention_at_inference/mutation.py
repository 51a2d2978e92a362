"""Lesson 6's mutation testing: fresh inputs for each exercise, to tell an equivalent mutant
from a survivor, and the survivors a human judged equivalent to the reference, with why
(see :mod:`attnkit_autograder.quality.mutation`)."""

from __future__ import annotations

from collections.abc import Callable

from ..requests import Request

REQUESTS: dict[str, Callable[[], list[Request]]] = {}
"""Per exercise: the requests (shapes the contract allows, none of them the suite's own)."""

JUDGED: list[tuple[str, str, tuple[str, ...], str]] = []
"""Survivors a human judged equivalent: (exercise, statement, changes, why)."""
