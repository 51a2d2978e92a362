"""Hostile cases added per principle, beside the classic corpus (attnkit_autograder.hostile).

Each module here is one principle of the threat model (say ``totality.py``: the grader
never crashes on what a student wrote). A module may define any of:

- ``cases(targets: Targets) -> list[Case]``: planted cases (a correct lesson-2 notebook
  with one attack), graded in the same run as the classic corpus;
- ``file_cases(released: dict) -> dict[str, tuple[Case, dict | bytes]]``: whole files;
- ``UNGRADABLE: tuple[str, ...]``: names of its file cases that must be refused as errors.

``tests/test_grader_hostile.py`` grades every case of every module in one run, and each
gets exactly its expected outcome.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType
from typing import Any

from attnkit_autograder.hostile import Case, Targets


def modules() -> list[ModuleType]:
    return [
        importlib.import_module(f"{__name__}.{info.name}")
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
    ]


def cases(targets: Targets) -> list[Case]:
    return [case for module in modules() for case in getattr(module, "cases", list)(targets)]


def file_cases(released: dict[str, Any]) -> dict[str, tuple[Case, dict[str, Any] | bytes]]:
    found: dict[str, tuple[Case, dict[str, Any] | bytes]] = {}
    for module in modules():
        found.update(getattr(module, "file_cases", lambda _: {})(released))
    return found


def ungradable() -> tuple[str, ...]:
    return tuple(name for module in modules() for name in getattr(module, "UNGRADABLE", ()))
