"""Run a notebook's code cells the way Jupyter's "Run All" does (see notebook_code for
the rule): one cell at a time in an IPython shell, a cell that raises or runs past its
limit never stopping the run, and the definitions live at each graded cell remembered.
"""

from __future__ import annotations

import ast
import contextlib
import dis
import inspect
import signal
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .ipython_shell import fresh_namespace, kernel_shell
from .notebook_code import Cell, first_line, read_cells


@dataclass
class CellOutcome:
    """What happened when one cell ran: nothing (ok), an error, or a timeout."""

    index: int
    status: str = "ok"  # ok | error | timeout | skipped
    error_type: str = ""
    message: str = ""
    line: int | None = None
    top_line: int | None = None
    """The line of the cell's own top-level code that was running when it raised."""

    def note(self, limit: float | None = None, source: str = "") -> str:
        """What happened, where, and what the student can do about it. The cell is named by
        its place among the code cells (its number after Run All) and, given its
        ``source``, by its first line, which is what a student can find."""
        first = first_line(source, 40)
        where = f"code cell {self.index}" + (f" (`{first}`)" if first else "")
        where += f", line {self.line}" if self.line else ""
        if self.status == "timeout":
            within = f" {limit:.0f} s" if limit else ""
            return (
                f"{where}: a statement stopped at the cell's{within} time limit; the rest of "
                "the cell and the cells after it still ran. Make it finish sooner, or move "
                "long experiments out of the notebook."
            )
        return (
            f"{where}: raised {self.error_type}: {self.message}. The cells after it still ran; "
            "to see it yourself, restart the kernel and run all cells."
        )


class CellTimeout(BaseException):
    """Raised inside a cell that ran past its time limit (BaseException: a bare ``except
    Exception`` in student code must not swallow it)."""


def cell_of(filename: str) -> int | None:
    """The code cell a code object came from, for cells run by :func:`run_cell`."""
    if filename.startswith("<ipython-input-"):
        number = filename.removeprefix("<ipython-input-").split("-", 1)[0]
        return int(number) if number.isdigit() else None
    return None


def _error_line(exc: BaseException) -> int | None:
    """The line, within its cell, where ``exc`` was raised from the cell's own code."""
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if cell_of(frame.f_code.co_filename) is not None:
            line = lineno
    if isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
    return line


def run_cell(shell: Any, cell: Cell, timeout: float | None = None) -> CellOutcome:
    """Run one cell in the shell's namespace; never raises for anything the cell does."""
    outcome = CellOutcome(cell.index)
    # IPython names the cell's code <ipython-input-N-...> after its execution count: using
    # the cell's position lets tracebacks and the forbidden-call recorder name the cell.
    shell.execution_count = cell.index
    # As in a kernel, the notebook's namespace is sys.modules["__main__"] while its cells
    # run (`from __main__ import softmax` works); the host process gets its own back after.
    host_main = sys.modules.get("__main__")
    sys.modules["__main__"] = shell.user_module
    previous = None
    if timeout:

        def interrupt(signum: int, frame: Any) -> None:
            raise CellTimeout

        previous = signal.signal(signal.SIGALRM, interrupt)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = shell.run_cell(cell.source, store_history=False, silent=False)
        error = result.error_before_exec or result.error_in_exec
    except CellTimeout as exc:  # raised outside IPython's own handler
        error = exc
    finally:
        if timeout:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous or signal.SIG_DFL)
        if host_main is not None:
            sys.modules["__main__"] = host_main
    if error is None:
        return outcome
    outcome.top_line = next(
        (n for f, n in traceback.walk_tb(error.__traceback__) if cell_of(f.f_code.co_filename)),
        None,
    )
    if isinstance(error, CellTimeout):
        outcome.status = "timeout"
        return outcome
    outcome.status = "error"
    outcome.error_type = type(error).__name__
    outcome.message = str(error)[:200]
    outcome.line = _error_line(error)
    return outcome


def without_statements(shell: Any, source: str, lines: set[int]) -> str:
    """The cell with the top-level statements that hold ``lines`` left out (each line kept,
    empty, so every other statement keeps its line number); the cell as it is when it
    cannot be read."""

    try:
        code = shell.transform_cell(source)
        statements = ast.parse(code).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return source
    text = code.splitlines(keepends=True)
    for statement in statements:
        end = statement.end_lineno or statement.lineno
        if any(statement.lineno <= line <= end for line in lines):
            text[statement.lineno - 1] = "pass\n"  # a top-level statement: column 0
            for index in range(statement.lineno, end):
                text[index] = "\n"
    return "".join(text)


def rest_of_cell(shell: Any, source: str, line: int) -> str | None:
    """The cell's top-level statements after the one that holds ``line``, at their own line
    numbers (None if there are none, or the cell cannot be read)."""

    try:
        code = shell.transform_cell(source)
        statements = ast.parse(code).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    ends = [s.end_lineno or s.lineno for s in statements if s.lineno <= line]
    if not ends:
        return None
    rest = "".join(code.splitlines(keepends=True)[max(ends) :])
    return "\n" * max(ends) + rest if rest.strip() else None


@dataclass
class NotebookRun:
    """A notebook after Run All: its namespace, and the definitions live at graded cells."""

    namespace: dict[str, Any]
    outcomes: list[CellOutcome] = field(default_factory=list)
    live_at_cell: dict[str, dict[str, Any]] = field(default_factory=dict)
    """grade_id -> every binding of the namespace when the graded cell was reached: the
    state in which the student saw the exercise pass (its helpers, constants and module
    aliases included)."""
    sources: dict[int, str] = field(default_factory=dict)
    """Each cell's source by index, so a note can quote the cell's first line."""

    @property
    def notes(self) -> list[str]:
        return [
            o.note(source=self.sources.get(o.index, ""))
            for o in self.outcomes
            if o.status in ("error", "timeout")
        ]

    state_at_cell: dict[str, Any] = field(default_factory=dict)
    """grade_id -> the process state the exercise ran in when the graded cell was reached,
    beyond the namespace: torch's default dtype (a scratch cell at the end may change it)."""

    def remember(self, grade_id: str) -> None:
        """Keep the namespace's bindings as they are at the graded cell ``grade_id``, and
        torch's default dtype."""
        self.live_at_cell[grade_id] = dict(self.namespace)
        self.state_at_cell[grade_id] = _default_dtype()

    def variants(self, watch: tuple[str, ...]) -> list[str]:
        """Graded cells at which an exercise of ``watch``, or anything it reads (its helpers,
        constants and module aliases, and theirs), was bound to another object than at the
        end. A name not yet bound there (a later exercise, a helper defined further down)
        makes no variant: without it, nothing that reads it can do better."""
        final, dtype = self.namespace, _default_dtype()
        return sorted(
            grade_id
            for grade_id, live in self.live_at_cell.items()
            if self.state_at_cell.get(grade_id) != dtype
            or any(
                final.get(name, _UNBOUND) is not live[name]
                for name in reads(watch, live)
                if name in live
            )
        )

    @contextlib.contextmanager
    def as_at(self, grade_id: str | None) -> Iterator[None]:
        """The namespace as it was at the graded cell ``grade_id`` (None: as it is) for the
        length of the block, then as it was before: the exercise, and every function of
        the notebook it calls, reads the bindings of that moment."""
        live = self.live_at_cell.get(grade_id) if grade_id is not None else None
        if live is None:
            yield
            return
        now, dtype = dict(self.namespace), _default_dtype()
        self.namespace.clear()
        self.namespace.update(live)
        _set_default_dtype(self.state_at_cell.get(grade_id))
        try:
            yield
        finally:
            self.namespace.clear()
            self.namespace.update(now)
            _set_default_dtype(dtype)


_UNBOUND = object()


def _default_dtype() -> Any:
    """torch's default dtype, where torch is loaded (None where it is not)."""
    torch = sys.modules.get("torch")
    return torch.get_default_dtype() if torch is not None else None


def _set_default_dtype(dtype: Any) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and dtype is not None:
        torch.set_default_dtype(dtype)


def reads(names: tuple[str, ...], namespace: dict[str, Any], depth: int = 8) -> set[str]:
    """``names``, and every global name the functions and classes bound to them read,
    followed through the notebook's own functions and classes (``depth`` levels)."""
    found = set(names)
    frontier = [namespace[n] for n in names if n in namespace]
    for _ in range(depth):
        following = []
        for value in frontier:
            for name in global_names(value) & namespace.keys() - found:
                found.add(name)
                following.append(namespace[name])
        frontier = following
    return found


def global_names(value: Any) -> set[str]:
    """The global names a function's code (or a class's methods') may read; none for
    anything else, or for an object that raises when looked at."""
    try:
        return _global_names(value)
    except Exception:
        return set()


def _global_names(value: Any) -> set[str]:
    codes = []
    if inspect.isfunction(value):
        codes.append(value.__code__)
    elif inspect.isclass(value):
        for member in vars(value).values():
            member = getattr(member, "__func__", member)
            if isinstance(member, property):
                member = member.fget
            if inspect.isfunction(member):
                codes.append(member.__code__)
    names: set[str] = set()
    while codes:
        code = codes.pop()
        names.update(_loaded_globals(code))
        codes += [c for c in code.co_consts if inspect.iscode(c)]
    return names


GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})
"""The instructions that read a global name (an attribute, ``self.x``, reads none)."""


def _loaded_globals(code: Any) -> set[str]:
    """The names ``code`` itself reads as globals."""
    return {str(i.argval) for i in dis.get_instructions(code) if i.opname in GLOBAL_LOADS}


def run_cells(
    cells: list[Cell],
    shell: Any | None = None,
    cell_timeout: float | None = None,
    watch: tuple[str, ...] = (),
) -> NotebookRun:
    """Run ``cells`` in order as Jupyter's Run All would (see the module docstring).

    ``watch`` names the exercises whose definition is recorded at every graded cell.
    Output the cells print goes wherever this process's stdout goes.
    """
    shell = shell or kernel_shell()
    run = NotebookRun(fresh_namespace(shell))
    for cell in cells:
        if cell.grade_id is not None:
            run.remember(cell.grade_id)
        if cell.is_check_cell:
            continue
        run.sources[cell.index] = cell.source
        run.outcomes.append(run_cell(shell, cell, cell_timeout))
    sys.stdout.flush()
    return run


def load_notebook(path: Path, cell_timeout: float | None = None) -> NotebookRun:
    """Read ``path`` and run all its code cells here, in this process (trusted code only:
    the student's own notebook in ``attnkit check``)."""
    return run_cells(read_cells(path), cell_timeout=cell_timeout)


def load_definitions(path: Path, roots: Any = None) -> tuple[dict[str, Any], list[Cell], list[str]]:
    """(namespace, cells, notes) of ``path`` after Run All, in this process."""
    cells = read_cells(path)
    run = run_cells(cells)
    return run.namespace, cells, run.notes
