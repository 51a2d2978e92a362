"""Read a student's notebook (or .py file) and run its code cells the way Jupyter's "Run All" does.

The rule, the same for the grader, ``attnkit check`` and the in-notebook ``lesson.check``:

* every code cell runs, in order, through IPython's own input transformation (magics,
  ``!shell`` lines, ``name?`` help) in a namespace where ``display``, ``get_ipython`` and
  ``__name__ == "__main__"`` exist, as in a kernel;
* a cell that raises does not stop the run: the error becomes a note naming the cell and
  line, and the next cell runs; a cell that runs past its time limit is interrupted;
* the only cells not run are *check cells*: cells whose code does nothing but call the
  kit's self-check (``lesson.check(softmax)``) or hold comments (the hidden-test
  placeholders). They bind no name, so nothing an exercise needs can depend on them;
* the graded definition of an exercise is the one bound when the last cell has run. When
  the notebook still has the exercise's graded cell and the definition *live at that cell*
  differs (the student redefined it further down), both are graded and the better counts.

Reading is defensive: a notebook can be malformed JSON, not UTF-8, empty, nested
absurdly deep, or in the old nbformat 3 layout. Each problem is a :class:`NotebookError`
naming the file and saying what to do.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import signal
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import KitError
from .ipython_shell import fresh_namespace, kernel_shell

MAX_JSON_DEPTH = 64


class NotebookError(KitError):
    """The file cannot be read as a notebook at all."""


@dataclass(frozen=True)
class Cell:
    """One code cell of a submission."""

    index: int
    """1-based position among the notebook's code cells (what notes call "code cell N")."""
    source: str
    grade_id: str | None = None
    """The nbgrader grade id when this is a graded (test) cell, else None."""

    @property
    def is_check_cell(self) -> bool:
        return is_check_cell(self.source)


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
                f"{where}: stopped at its{within} time limit, and the cells after it still ran. "
                "Make it finish sooner, or move long experiments out of the notebook."
            )
        return (
            f"{where}: raised {self.error_type}: {self.message}. The cells after it still ran; "
            "to see it yourself, restart the kernel and run all cells."
        )


def first_line(source: str, width: int) -> str:
    """A cell's first non-blank line, at most ``width`` characters: what a student can find
    the cell by (Jupyter shows no cell numbers until the cells have run)."""
    line = next((ln.strip() for ln in source.splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 3] + "..."


_JSON_SPECIAL = re.compile(r'["\\\[\]{}]')
"""The only characters that change a JSON text's nesting: quotes, escapes, brackets."""


def _nesting_depth(text: str) -> int:
    """The deepest bracket nesting in a JSON text, without recursing (json.loads would).
    Only the characters that matter are visited (one pass, found by the regex engine)."""
    depth = deepest = 0
    in_string = False
    escaped_at = -1  # the position a backslash in a string escapes
    for match in _JSON_SPECIAL.finditer(text):
        at = match.start()
        if at == escaped_at:
            continue
        char = text[at]
        if in_string:
            if char == "\\":
                escaped_at = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _source_text(source: Any) -> str:
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def read_cells(path: Path, raw: bytes | None = None) -> list[Cell]:
    """The code cells of ``path`` (whose bytes are ``raw`` when the caller read them
    already), in order. A .py file is cut into cells where Jupyter's export marks them."""
    try:
        raw = path.read_bytes() if raw is None else raw
    except OSError as exc:
        raise NotebookError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(
            f"{path}: is not UTF-8 text (bad byte at position {exc.start}).",
            "Save the notebook again from Jupyter, which always writes UTF-8.",
        ) from None
    if path.suffix.lower() == ".py":
        return python_cells(text.replace("\r\n", "\n"))
    if not text.strip():
        raise NotebookError(f"{path}: is empty.", "Submit the notebook you worked in.")
    notebook = _notebook_json(path, text)
    cells, source_key = _raw_cells(path, notebook)
    found = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = _source_text(cell.get(source_key, "")).replace("\r\n", "\n")
        metadata = cell.get("metadata")
        nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
        grade_id = None
        if isinstance(nbgrader, dict) and nbgrader.get("grade") is True:
            value = nbgrader.get("grade_id")
            grade_id = value if isinstance(value, str) else None
        found.append(Cell(len(found) + 1, source, grade_id))
    return found


CELL_MARKER = re.compile(r"^# (?:In\[[ 0-9]*\]:|%%)")
"""Where a notebook exported as Python starts a cell: Jupyter's "Download as Python"
writes ``# In[3]:`` (``# In[ ]:`` for a cell never run), jupytext's percent format
``# %%``."""


def python_cells(text: str) -> list[Cell]:
    """A notebook exported as Python, cut back into its cells at the export's markers (a
    file without any is one cell): each cell then runs, fails and is skipped on its own,
    as in the notebook it came from."""
    chunks: list[list[str]] = [[]]
    for line in text.split("\n"):
        if CELL_MARKER.match(line):
            chunks.append([])
        else:
            chunks[-1].append(line)
    sources = ["\n".join(chunk).strip("\n") for chunk in chunks]
    code = [source for source in sources if source.strip()]
    return [Cell(index, source) for index, source in enumerate(code or [""], start=1)]


def _notebook_json(path: Path, text: str) -> dict[str, Any]:
    """The notebook's JSON object, or a NotebookError saying why the file is not one."""
    if _nesting_depth(text) > MAX_JSON_DEPTH:
        raise NotebookError(
            f"{path}: is not a notebook (its JSON nests more than {MAX_JSON_DEPTH} levels deep).",
            "Submit the notebook you worked in, saved from Jupyter.",
        )
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError, MemoryError) as exc:
        # ValueError: JSONDecodeError, and numbers longer than Python will convert.
        if isinstance(exc, json.JSONDecodeError):
            # json's own wording may end in "at" ("Unterminated string starting at").
            reason = f"{exc.msg}, line {exc.lineno} column {exc.colno}"
        else:
            reason = "too deeply nested" if isinstance(exc, RecursionError) else "a value too large"
        raise NotebookError(
            f"{path}: is not valid notebook JSON ({reason}).",
            "The file was damaged, perhaps edited outside Jupyter. Re-download or re-save it.",
        ) from None
    if not isinstance(notebook, dict):
        raise NotebookError(f"{path}: is JSON but not a notebook.")
    return notebook


def _raw_cells(path: Path, notebook: dict[str, Any]) -> tuple[list[Any], str]:
    """The notebook's cells (nbformat 4, or 3's worksheets) and the key of their source."""
    if notebook.get("nbformat") == 3:
        worksheets = notebook.get("worksheets")
        cells = [
            c
            for ws in (worksheets if isinstance(worksheets, list) else [])
            if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
            for c in ws["cells"]
        ]
        source_key = "input"
    elif notebook.get("nbformat") == 4:
        cells = notebook.get("cells")
        cells = cells if isinstance(cells, list) else []
        source_key = "source"
    else:
        raise NotebookError(
            f"{path}: has unsupported nbformat {notebook.get('nbformat')!r} (expected 4 or 3)."
        )
    return cells, source_key


UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)
"""What Python's parser raises on text it cannot take: a syntax error, a NUL byte
(ValueError on some 3.11 releases), nesting deeper than its stack (RecursionError, or
MemoryError for thousands of unary minus signs), literals too large."""


def parse_python(source: str) -> ast.Module | None:
    """The syntax tree of student text, or None when Python cannot parse it. Total: the
    one place the kit parses a student's code, so no text can make the grader raise."""
    try:
        return ast.parse(source)
    except UNPARSABLE:
        return None


CHECK_CELL_CHARS = 20_000


LESSON_DEMOS = ("train", "show_heads", "show_tiles", "compare_memory", "compare_time")
"""The lesson helper's demonstrations (see attnkit.watch and attnkit.flash): they train,
draw and measure for the student's eyes, and no exercise is graded on what they do."""


@functools.lru_cache(maxsize=512)  # asked of every cell again and again while grading
def is_check_cell(source: str) -> bool:
    """True for a cell the grader does not run: one that only calls the kit's self-check
    (``lesson.check(softmax)``) or the lesson helper's demonstrations (``lesson.train(...)``,
    ``history = lesson.show_heads(...)``), or holds nothing but comments.

    A check binds no name and changes no state an exercise could read. A demonstration
    trains or draws a model the notebook built, for the student to watch (training takes a
    minute); the hidden tests build their own, so no grade can depend on it. Its arguments
    must evaluate nothing (names, constants, attributes, lambdas), or the cell runs. One
    longer than CHECK_CELL_CHARS is run like any other: the grader never parses a huge cell
    for this.
    """
    if len(source) > CHECK_CELL_CHARS:
        return False
    tree = parse_python(source)
    if tree is None:
        return False
    return all(_lesson_call(node) for node in tree.body)


def _lesson_call(node: ast.stmt) -> bool:
    """``lesson.check(name)``, or a demonstration called (or assigned to one name) with
    arguments that evaluate nothing."""
    single_target = isinstance(node, ast.Assign) and [type(t) for t in node.targets] == [ast.Name]
    call = node.value if isinstance(node, ast.Expr) or single_target else None
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "lesson"
    ):
        return False
    if call.func.attr == "check":
        plain = all(isinstance(a, ast.Name | ast.Constant) for a in call.args)
        return isinstance(node, ast.Expr) and plain and not call.keywords
    arguments = [*call.args, *(k.value for k in call.keywords)]
    return call.func.attr in LESSON_DEMOS and all(_inert(a) for a in arguments)


def _inert(node: ast.expr) -> bool:
    """An argument whose evaluation runs no code of the notebook's (a lambda's body runs
    only if called, which only the skipped helper would do)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name | ast.Constant | ast.Lambda)


# -- running cells ------------------------------------------------------------------------------


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
    if isinstance(error, CellTimeout):
        outcome.status = "timeout"
        return outcome
    outcome.status = "error"
    outcome.error_type = type(error).__name__
    outcome.message = str(error)[:200]
    outcome.line = _error_line(error)
    outcome.top_line = next(
        (n for f, n in traceback.walk_tb(error.__traceback__) if cell_of(f.f_code.co_filename)),
        None,
    )
    return outcome


def rest_of_cell(shell: Any, source: str, line: int) -> str | None:
    """The cell's top-level statements after the one that holds ``line``, at their own line
    numbers (None if there are none, or the cell cannot be read)."""
    import ast

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
    """grade_id -> {name: the object bound to that name when the graded cell was reached}."""
    sources: dict[int, str] = field(default_factory=dict)
    """Each cell's source by index, so a note can quote the cell's first line."""

    @property
    def notes(self) -> list[str]:
        return [
            o.note(source=self.sources.get(o.index, ""))
            for o in self.outcomes
            if o.status in ("error", "timeout")
        ]


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
            run.live_at_cell[cell.grade_id] = {
                n: run.namespace[n] for n in watch if n in run.namespace
            }
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
