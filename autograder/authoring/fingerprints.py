"""Mistake fingerprints: each catalogued mistake's answers to the visible checks.

Computed here, in the instructor package, from the references, and kept as data in
``attnkit/mistake_fingerprints.bin`` (written by ``attnkit generate``, checked by
``attnkit generate --check``), which the kit and the student bundle both ship: the public
self-check names a mistake without the catalogue's code or the references.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from attnkit.diagnosis import (
    FINGERPRINTS,
    Fingerprint,
    Fingerprints,
    MistakeInfo,
    RecordedCall,
    RecordingImplementation,
    compute_fingerprints_with,
    replay,
    same,
)
from attnkit.implementation import LocalImplementation
from attnkit.selfcheck.runner import check_exercise
from attnkit.student_process.wire import WireError, decode, encode
from attnkit_solutions.exercises import reference_namespace

from ..grading.catalogue import load_mistakes, variants


def compute_fingerprints(slug: str | None = None, exercise: str | None = None) -> Fingerprints:
    """Record the calls the visible checks make to the references, then replay them on
    every program of every catalogued mistake (built on the references); only those of
    one exercise when ``slug`` and ``exercise`` are given."""

    correct: dict[str, dict[str, dict[str, Any]]] = {}
    calls: dict[str, list[RecordedCall]] = {}
    prints = []
    for mistake in load_mistakes():
        if slug is not None and (mistake.assignment, mistake.exercise) != (slug, exercise):
            continue
        where = f"{mistake.assignment}/{mistake.exercise}"
        base = reference_namespace(mistake.assignment)
        if where not in calls:
            recorder = RecordingImplementation(LocalImplementation(base, "reference"))
            check_exercise(recorder, mistake.assignment, mistake.exercise)
            calls[where] = recorder.calls.get(mistake.exercise, [])
            correct[where] = {c.key: c.answer.plain() for c in calls[where]}
        programs = tuple(
            {c.key: replay(variant, c).plain() for c in calls[where]}
            for variant in variants(base, mistake)
        )
        info = {k: getattr(mistake, k) for k in MistakeInfo.__dataclass_fields__}
        prints.append(Fingerprint(**info, programs=programs))
    return Fingerprints(correct, tuple(prints))


def fingerprint_bytes() -> bytes:
    """The fingerprints of the whole catalogue, in the wire format."""
    prints = compute_fingerprints()
    return encode({"correct": prints.correct, "mistakes": [asdict(f) for f in prints.mistakes]})


def equivalent(kept: bytes, fresh: bytes) -> bool:
    """Whether two fingerprint files say the same thing. Floats are compared with the
    tolerance diagnosis itself uses (:func:`attnkit.diagnosis.same`), never byte for byte:
    the last bits of a float32 matmul differ between CPUs (1e-8 to 2e-7 here), and a
    difference diagnosis cannot see must not make a fresh clone's check fail."""
    try:
        return same(decode(kept), decode(fresh))
    except WireError:
        return False


def write_fingerprints(path: Path = FINGERPRINTS) -> Path:
    """Write the fingerprints to ``path``, unless the file there already says the same
    thing (see :func:`equivalent`): regenerating on another machine leaves it untouched."""
    fresh = fingerprint_bytes()
    if not (path.is_file() and equivalent(path.read_bytes(), fresh)):
        path.write_bytes(fresh)
    return path


def stale(path: Path = FINGERPRINTS) -> list[str]:
    """Why the committed fingerprints no longer match the catalogue (empty if they do)."""
    if not path.is_file():
        return [f"{path} is missing"]
    if not equivalent(path.read_bytes(), fingerprint_bytes()):
        return [f"{path} does not match autograder/mistakes.toml"]
    return []


compute_fingerprints_with(compute_fingerprints)
