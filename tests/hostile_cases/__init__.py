"""The hostile corpus: submissions written by someone who read the kit's source.

Each module here is one group of attacks, by principle (``classic.py`` holds the first
corpus: evasions of the from-scratch rule, forged replies, escapes, limits, damaged
files). A module may define any of:

- ``cases(targets: Targets) -> list[Case]``: planted cases (a correct lesson-2 notebook
  with one attack), each with its exact expected outcome;
- ``file_cases(released: dict) -> dict[str, tuple[Case, dict | bytes]]``: whole files;
- ``UNGRADABLE: tuple[str, ...]``: names of its file cases that must be refused as errors.

``tests/test_grader_hostile.py`` grades every case of every module in one run, beside
correct students, and each gets exactly its expected outcome.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Collection
from pathlib import Path
from types import ModuleType
from typing import Any

from attnkit_autograder.authoring.corpus import released_notebook, write_notebook

from .classic import MAX_SCORE, SLUG, Case, Targets, planted

__all__ = ["MAX_SCORE", "SLUG", "Case", "Targets", "build_corpus", "cases", "file_cases"]


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


def build_corpus(
    out_dir: Path, assignments_dir: Path, targets: Targets, only: Collection[str] | None = None
) -> dict[str, tuple[Case, Path]]:
    """Write every case (or those named in ``only``) as ``<case>_02_self_attention.ipynb``
    under ``out_dir``. Returns, per case name, the case and its file. Names are unique: a
    duplicate is a bug in the corpus and raises ValueError."""
    released = released_notebook(SLUG, assignments_dir)
    written: dict[str, tuple[Case, Path]] = {}
    contents: list[tuple[Case, dict[str, Any] | bytes]] = [
        (case, planted(released, case)) for case in cases(targets)
    ]
    contents += list(file_cases(released).values())
    for case, content in contents:
        if case.name in written:
            raise ValueError(f"two hostile cases are called {case.name}")
        path = out_dir / f"{case.name}_{SLUG}.ipynb"
        written[case.name] = (case, path)
        if only is not None and case.name not in only:
            continue
        if isinstance(content, bytes):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        else:
            write_notebook(content, path)
    return {name: entry for name, entry in written.items() if only is None or name in only}
