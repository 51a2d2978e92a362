"""Read a student's notebook (or .py file) into code cells, and the rule by which they run:
the way Jupyter's "Run All" does (:mod:`attnkit.notebook_run` runs them).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import KitError

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


LESSON_DEMOS = (
    "train",
    "show_heads",
    "show_window",
    "show_rope",
    "show_cache_memory",
    "time_generation",
    "show_tiles",
    "compare_memory",
    "compare_time",
)
"""The lesson helper's demonstrations (see attnkit.watch, attnkit.inference and
attnkit.flash): they train, time, draw and measure for the student's eyes, and no exercise is
graded on what they do."""


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
