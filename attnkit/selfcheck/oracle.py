"""Expected values computed once by PyTorch and kept as data: a NumPy lesson's self-check
never loads PyTorch.

Lesson 1's visible checks compare a student's NumPy answers with what PyTorch's softmax and
attention give on the checks' fixed inputs. ``attnkit generate`` runs those checks once,
recording each value PyTorch gives (:func:`recording`), and keeps them in
``expected_values.json`` under a name per value; a student's check reads them back. (A
NumPy formula in the checks would be the exercise's answer, in a file students read.)
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import KitError

EXPECTED_VALUES = Path(__file__).with_name("expected_values.json")

_recorded: dict[str, Any] | None = None


class StaleExpectedValues(KitError):
    """A check asked for a value the kept data lacks: a damaged install or checkout."""


def expected(name: str, compute: Callable[[], Any]) -> np.ndarray:
    """The value ``compute()`` gives (it may load PyTorch): computed and kept while
    ``attnkit generate`` records, read from the kept data otherwise."""
    if _recorded is not None:
        value = np.asarray(compute())
        _recorded[name] = {
            "dtype": str(value.dtype),
            "shape": list(value.shape),
            "values": value.ravel().tolist(),
        }
        return value
    kept = _kept().get(name)
    if kept is None:
        raise StaleExpectedValues(
            f"{EXPECTED_VALUES} has no expected value {name!r}.",
            "Reinstall the kit (in a clone of it: run attnkit generate).",
        )
    return np.asarray(kept["values"], dtype=kept["dtype"]).reshape(kept["shape"])


@functools.cache
def _kept() -> dict[str, Any]:
    try:
        return json.loads(EXPECTED_VALUES.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


@contextlib.contextmanager
def recording() -> Iterator[dict[str, Any]]:
    """Compute every expected value afresh while the block runs; yields them by name."""
    global _recorded
    _recorded = {}
    try:
        yield _recorded
    finally:
        _recorded = None
