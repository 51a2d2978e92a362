"""What each lesson grades: its hidden tests, catalogued mistakes, points (the rubric),
mutation inputs and judged equivalents, allowed kernels and heatmap wiring.

Content, not machinery: it imports only the public ``attnkit`` package and the sandbox.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

LESSONS = Path(__file__).resolve().parent


def folder(slug: str) -> Path:
    """The folder of lesson ``slug`` (``02_self_attention`` lives in ``l02_self_attention``)."""
    return LESSONS / f"l{slug}"


def part(slug: str, name: str) -> ModuleType:
    """One module of lesson ``slug``'s folder: ``hidden_tests``, ``mutation``, ``heatmaps``."""
    return importlib.import_module(f"{__name__}.l{slug}.{name}")


def memory_bound(slug: str) -> int | None:
    """The memory, in bytes, lesson ``slug``'s sandboxed workers may add to what they start
    with, where the lesson's folder sets one (``MEMORY_MB`` in its ``__init__.py``: lesson 7,
    whose point is attention that never holds the whole score matrix); None where the
    grading options' ``--memory-mb`` alone applies."""
    megabytes = getattr(importlib.import_module(f"{__name__}.l{slug}"), "MEMORY_MB", None)
    return None if megabytes is None else int(megabytes) * 1024**2
