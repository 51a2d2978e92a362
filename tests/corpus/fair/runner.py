"""Run a corpus submission the way Jupyter's "Run All" does, in this process, and grade it.

The code cells of the handed-in file run in order in one IPython shell (IPython's own
input transformation: magics, ``!`` shell escapes, ``?`` help, ``display``), continuing
past a cell that raises, as nbgrader does. The resulting namespace then goes through the
kit's hidden suite against the references: this is what proves a submission correct,
independently of the grader under test.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder import Built
from IPython.core.interactiveshell import InteractiveShell

from attnkit.notebook_code import is_check_cell, python_cells
from attnkit.outcome import PASSED
from attnkit_autograder.lessons.rubric import cell_text

os.environ.setdefault("MPLBACKEND", "Agg")


@dataclass(frozen=True)
class CellError:
    index: int
    error: str


def cells_of(path: Path) -> list[str]:
    """The code cells of a handed-in file, as the grader reads them (a .py export is cut at
    its cell markers: attnkit.notebook_code.python_cells)."""
    if path.suffix == ".py":
        return [c.source for c in python_cells(path.read_text(encoding="utf-8"))]
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]


class KernelLikeShell(InteractiveShell):
    """IPython's shell as a kernel runs it: ``%matplotlib inline`` needs no GUI event loop."""

    def enable_gui(self, gui: str | None = None) -> None:
        """Inline plots need no event loop (ipykernel's shell does nothing here either)."""


def shell() -> KernelLikeShell:
    """The process's IPython shell, with a fresh namespace.

    IPython makes its namespace ``sys.modules["__main__"]`` when the shell is created; the
    test process's own ``__main__`` is put back, since multiprocessing (the grader's
    tests, later in the same process) reads it.
    """
    host_main = sys.modules.get("__main__")
    instance = KernelLikeShell.instance()
    instance.reset(new_session=False)
    if host_main is not None:
        sys.modules["__main__"] = host_main
    return instance


@contextlib.contextmanager
def kernel_folder(folder: Path) -> Iterator[None]:
    """As a kernel started on a notebook in ``folder``: it is the working folder, and
    importable (a module one cell writes with %%writefile is imported by another)."""
    previous = Path.cwd()
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(folder))
        os.chdir(previous)


def run_all(path: Path, at_graded_cell: Any = None) -> tuple[dict[str, Any], list[CellError]]:
    """Run every code cell of ``path`` the grader runs (not the checks, nor the lesson's
    training and drawing: see attnkit.notebook_code.is_check_cell); return the namespace and
    the cells that raised. ``at_graded_cell(grade_id, namespace)`` is called as each graded
    cell is reached (found by its released code, as the grader finds it), before it runs.

    The caller chooses the working folder (see :func:`kernel_folder`)."""
    ipython = shell()
    errors: list[CellError] = []
    sink = io.StringIO()
    host_main = sys.modules.get("__main__")
    sys.modules["__main__"] = ipython.user_module  # as in a kernel, while the cells run
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            for index, source in enumerate(cells_of(path)):
                grade_id = graded.get(cell_text(source)) if graded else None
                if grade_id and at_graded_cell is not None:
                    at_graded_cell(grade_id, ipython.user_ns)
                if is_check_cell(source):
                    continue
                result = ipython.run_cell(source, store_history=False)
                failure = result.error_before_exec or result.error_in_exec
                if failure is not None:
                    errors.append(CellError(index, f"{type(failure).__name__}: {failure}"))
    finally:
        if host_main is not None:
            sys.modules["__main__"] = host_main
    return ipython.user_ns, errors


graded: dict[str, str] = {}
"""The lesson being run's graded cells, by their released code (set by hidden_verdicts)."""


@contextlib.contextmanager
def torch_state() -> Iterator[None]:
    """torch's process-wide settings as they were, after a notebook that changed them (its
    default dtype, its threads): one case never leaks into the next."""
    import torch

    dtype, threads = torch.get_default_dtype(), torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        torch.set_num_threads(threads)


def hidden_verdicts(built: Built, path: Path) -> tuple[list[Any], list[CellError]]:
    """Run ``path`` as Jupyter would, and put each exercise through its hidden tests where
    its graded cell is, and again at the end: the better counts (as the grader judges an
    exercise in the state the student saw it pass)."""
    from attnkit.implementation import LocalImplementation
    from attnkit_autograder.grading.harness import reference_implementation, run_suite
    from attnkit_autograder.grading.scoring import better_of
    from attnkit_autograder.lessons.rubric import graded_cells, released_graded_sources

    reference = reference_implementation(built.lesson)
    at_cells: list[Any] = []

    def suite(namespace: dict[str, Any], grade_ids: set[str] | None = None) -> list[Any]:
        host_main = sys.modules.get("__main__")
        # As in a kernel, the notebook is __main__ while its code is called.
        sys.modules["__main__"] = KernelLikeShell.instance().user_module
        try:
            implementation = LocalImplementation(dict(namespace), label=built.name)
            return run_suite(implementation, built.lesson, reference, grade_ids)
        finally:
            if host_main is not None:
                sys.modules["__main__"] = host_main

    graded.clear()
    graded.update(released_graded_sources(built.lesson))
    with torch_state(), kernel_folder(path.parent):
        namespace, errors = run_all(path, lambda g, ns: at_cells.extend(suite(ns, {g})))
        passed = {v.grade_id for v in at_cells} - {
            v.grade_id for v in at_cells if v.status != PASSED
        }
        rest = {cell.grade_id for cell in graded_cells(built.lesson)} - passed
        at_end = suite(namespace, rest) if rest else []
    return better_of(at_cells, at_end), errors
