"""The expected values the public visible checks keep as data (see attnkit.selfcheck.oracle).

``attnkit generate`` runs every visible check against the references with PyTorch at hand
and writes what each kept value is; ``attnkit generate --check`` recomputes them and
compares with a tolerance (the last bits of a float differ between CPUs).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.assignments import ASSIGNMENTS
from attnkit.implementation import LocalImplementation
from attnkit.selfcheck.oracle import EXPECTED_VALUES, recording
from attnkit.selfcheck.runner import check_exercise
from attnkit_solutions.exercises import reference_namespace


def expected_values() -> dict[str, Any]:
    """Every value the visible checks keep, computed afresh, by name."""
    with recording() as values:
        for slug, assignment in ASSIGNMENTS.items():
            implementation = LocalImplementation(reference_namespace(slug), "reference")
            for exercise in assignment.exercises:
                check_exercise(implementation, slug, exercise.name)
    return dict(sorted(values.items()))


def _same(kept: dict[str, Any], fresh: dict[str, Any]) -> bool:
    if kept.keys() != fresh.keys():
        return False
    for name, value in fresh.items():
        old = kept[name]
        if (old.get("dtype"), old.get("shape")) != (value["dtype"], value["shape"]):
            return False
        if not np.allclose(old["values"], value["values"], rtol=1e-9, atol=1e-12, equal_nan=True):
            return False
    return True


def _kept(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write(path: Path = EXPECTED_VALUES) -> Path:
    """Write the kept values, unless the file there already says the same thing."""
    fresh = expected_values()
    kept = _kept(path)
    if kept is None or not _same(kept, fresh):
        path.write_text(json.dumps(fresh, indent=1) + "\n", encoding="utf-8")
    return path


def stale(path: Path = EXPECTED_VALUES) -> list[str]:
    """Why the kept values no longer match the checks (empty if they do)."""
    kept = _kept(path)
    if kept is None:
        return [f"{path} is missing or unreadable"]
    if not _same(kept, expected_values()):
        return [f"{path} does not match the visible checks"]
    return []
