"""Telling an equivalent mutant from a survivor: a mutant the hidden suite does not kill is
asked the requests its lesson lists (``mutation.REQUESTS`` in the lesson's folder); if every
answer agrees with the reference's, it is *likely equivalent*; if one differs, the suite has
a gap. The survivors a human has judged equivalent are each lesson's ``mutation.JUDGED``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from attnkit.assignments import ASSIGNMENTS
from attnkit.implementation import RECORDER_KEYS, LocalImplementation
from attnkit.probe import Probe

from .. import lessons
from ..lessons.requests import Request


@functools.cache
def known_equivalent() -> dict[tuple[str, str, str, str], str]:
    """(slug, exercise, statement, change) -> why the mutant computes what the reference
    does, from every lesson's judged survivors."""
    return {
        (slug, exercise, statement, change): why
        for slug in ASSIGNMENTS
        for exercise, statement, changes, why in lessons.part(slug, "mutation").JUDGED
        for change in changes
    }


def answer(namespace: Mapping[str, Any], slug: str, exercise: str, request: Request) -> Any:
    """What the implementation answers to one request: its result, or the error it raised."""
    assignment = ASSIGNMENTS[slug]
    probe = Probe(
        LocalImplementation(namespace), assignment.exercise(exercise), assignment.framework
    )
    method, kwargs = request
    try:
        if method == "call":
            result = probe.call(*kwargs["args"], **kwargs.get("kwargs", {}))
        else:
            result = getattr(probe, method)(**kwargs)
    except Exception as exc:
        return f"raised {type(exc).__name__}"
    return {k: v for k, v in result.items() if k not in (*RECORDER_KEYS, "params")}


def same(a: Any, b: Any) -> bool:
    """Equal structure; arrays equal in shape and dtype and close in value (NaN == NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind not in "fc":
            return bool(np.array_equal(a, b))
        return bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
    return bool(a == b)


def agrees(
    slug: str, exercise: str, reference: Mapping[str, Any], mutant: Mapping[str, Any]
) -> bool:
    """Whether the mutant answers every request of the exercise as the reference does
    (never, for an exercise with no requests here: its survivors are reported as gaps)."""
    requests = lessons.part(slug, "mutation").REQUESTS
    if exercise not in requests:
        return False
    for request in requests[exercise]():
        want = answer(reference, slug, exercise, request)
        if isinstance(want, str):
            raise AssertionError(f"the reference {want} on {exercise} {request}: fix the request")
        if not same(want, answer(mutant, slug, exercise, request)):
            return False
    return True
