"""Detect library calls that would skip the point of an exercise.

Two independent detectors, because either alone can be dodged:

* :func:`scan_source` reads the exercise's source code and finds the forbidden names
  however they are reached (``torch.softmax``, ``F.softmax``, ``x.softmax``,
  ``from torch.nn.functional import softmax``, ``getattr(torch, "softmax")``).
* :func:`tripwires` wraps the forbidden callables while the exercise runs and records
  every call, which also catches a forbidden call hidden inside a helper function.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any


def _final_names(paths: Iterable[str]) -> dict[str, str]:
    return {path.rsplit(".", 1)[-1]: path for path in paths}


def scan_source(source: str, forbidden: Iterable[str]) -> list[str]:
    """Forbidden calls that appear in ``source``, as dotted names, sorted."""
    finals = _final_names(forbidden)
    if not finals:
        return []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in finals:
            found.add(finals[node.attr])
        elif isinstance(node, ast.ImportFrom):
            found.update(finals[a.name] for a in node.names if a.name in finals)
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in finals
        ):
            found.add(finals[node.value])  # getattr(torch, "softmax") and friends
    return sorted(found)


def _resolve(path: str) -> tuple[Any, str] | None:
    """(owner object, attribute) for a dotted path whose module is already imported."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:split]))
        if module is None:
            continue
        owner = module
        for part in parts[split:-1]:
            owner = getattr(owner, part, None)
            if owner is None:
                return None
        return (owner, parts[-1]) if hasattr(owner, parts[-1]) else None
    return None


@contextmanager
def tripwires(paths: Iterable[str]) -> Iterator[list[str]]:
    """Record calls to ``paths`` made inside the block; the calls still work.

    Only modules that are already imported are wrapped: code that never imported scipy
    cannot call scipy.special.softmax.
    """
    used: list[str] = []
    patched: list[tuple[Any, str, Any]] = []
    for path in paths:
        resolved = _resolve(path)
        if resolved is None:
            continue
        owner, attr = resolved
        original = getattr(owner, attr)

        def wrapper(*args: Any, __original=original, __path=path, **kwargs: Any) -> Any:
            used.append(__path)
            return __original(*args, **kwargs)

        setattr(owner, attr, wrapper)
        patched.append((owner, attr, original))
    try:
        yield used
    finally:
        for owner, attr, original in reversed(patched):
            setattr(owner, attr, original)
