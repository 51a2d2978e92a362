"""Read a student's notebook (or .py file) and keep only its definitions.

Grading runs a submission's *definitions* - imports, functions, classes and plain
assignments - not its demo cells. A cell that prints, plots or crashes cannot take
working functions down with it, and running nothing but definitions keeps grading fast.

Reading is defensive: a notebook can be malformed JSON, not UTF-8, empty, in the old
nbformat 3 layout, or have cells that do not parse. Each problem becomes a note that
names the file and the cell; the rest of the file is still used.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import KitError

KEPT_STATEMENTS = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Assign,
    ast.AnnAssign,
)


class NotebookError(KitError):
    """The file cannot be read as a notebook at all."""


@dataclass(frozen=True)
class Statement:
    """One top-level definition, with where it came from."""

    cell: int
    line: int
    names: tuple[str, ...]
    code: str


@dataclass
class Definitions:
    """The definitions of a submission, ready to execute, plus what was skipped and why."""

    statements: list[Statement] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def source_of(self, name: str) -> str:
        """All code that defines ``name`` (for the forbidden-call scan)."""
        return "\n".join(s.code for s in self.statements if name in s.names)

    def needed_for(self, roots: set[str]) -> Definitions:
        """Only the statements that ``roots`` need: their definitions, and whatever those
        refer to, transitively. Demo code (a dataloader, a plot, a big embedding table)
        that no exercise refers to is never run, which keeps grading fast and quiet."""
        wanted, needed = set(roots), set()
        changed = True
        while changed:
            changed = False
            for index, statement in enumerate(self.statements):
                if index in needed or not set(statement.names) & wanted:
                    continue
                needed.add(index)
                wanted |= referenced_names(statement.code)
                changed = True
        kept = [s for i, s in enumerate(self.statements) if i in needed]
        return Definitions(statements=kept, notes=list(self.notes))


def read_code_cells(path: Path) -> list[str]:
    """The source of every code cell, in order. A .py file counts as one cell."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise NotebookError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotebookError(
            f"{path}: is not UTF-8 text (bad byte at position {exc.start}).",
            "Save the notebook again from Jupyter, which always writes UTF-8.",
        ) from None
    if path.suffix == ".py":
        return [text]
    if not text.strip():
        raise NotebookError(f"{path}: is empty.", "Submit the notebook you worked in.")
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(
            f"{path}: is not valid notebook JSON ({exc.msg} at line {exc.lineno}).",
            "The file was damaged, perhaps edited outside Jupyter. Re-download or re-save it.",
        ) from None
    if not isinstance(notebook, dict):
        raise NotebookError(f"{path}: is JSON but not a notebook.")
    if notebook.get("nbformat") == 3:
        cells = [c for ws in notebook.get("worksheets", []) for c in ws.get("cells", [])]
        source_key = "input"
    elif notebook.get("nbformat") == 4:
        cells, source_key = notebook.get("cells", []), "source"
    else:
        raise NotebookError(
            f"{path}: has unsupported nbformat {notebook.get('nbformat')!r} (expected 4 or 3)."
        )
    sources = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get(source_key, "")
        sources.append("".join(source) if isinstance(source, list) else str(source))
    return sources


def strip_ipython(source: str) -> str:
    """Blank out IPython-only lines (magics, shell escapes, help) so the cell parses."""
    lines = []
    for line in source.splitlines():
        stripped = line.lstrip()
        ipython_only = stripped.startswith(("%", "!")) or (
            stripped.endswith("?") and not stripped.startswith("#")
        )
        lines.append("" if ipython_only else line)
    return "\n".join(lines)


def bound_names(node: ast.stmt) -> tuple[str, ...]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return (node.name,)
    if isinstance(node, ast.Import | ast.ImportFrom):
        return tuple((a.asname or a.name).split(".")[0] for a in node.names)
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return tuple(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))


def referenced_names(code: str) -> set[str]:
    """Every bare name ``code`` reads (in function bodies, defaults, bases, decorators)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def extract_definitions(cells: list[str]) -> Definitions:
    """Keep the top-level definitions of every cell; note cells that do not parse."""
    definitions = Definitions()
    for index, source in enumerate(cells, start=1):
        cleaned = strip_ipython(source)
        try:
            tree = ast.parse(cleaned)
        except SyntaxError as exc:
            definitions.notes.append(
                f"code cell {index} has a syntax error on its line {exc.lineno}: {exc.msg}; "
                "its definitions were skipped"
            )
            continue
        for node in tree.body:
            if isinstance(node, KEPT_STATEMENTS):
                code = ast.get_source_segment(cleaned, node, padded=False) or ""
                # Decorators sit above the def line and are not part of its segment.
                decorators = getattr(node, "decorator_list", [])
                if decorators:
                    first = min(d.lineno for d in decorators)
                    code = "\n".join(cleaned.splitlines()[first - 1 : node.end_lineno])
                definitions.statements.append(
                    Statement(index, node.lineno, bound_names(node), code)
                )
    return definitions


def execute_definitions(definitions: Definitions, namespace: dict[str, Any]) -> list[str]:
    """Run each statement on its own, so one failure does not stop the rest.

    Returns notes about statements that raised. Only ``Exception`` is caught: a
    KeyboardInterrupt still stops everything.
    """
    notes = []
    for statement in definitions.statements:
        try:
            code = compile(statement.code, f"<cell {statement.cell}>", "exec")
            exec(code, namespace)
        except Exception as exc:
            what = ", ".join(statement.names) or "a statement"
            notes.append(
                f"code cell {statement.cell}: defining {what} raised "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            )
    return notes


def load_definitions(
    path: Path, roots: set[str] | None = None
) -> tuple[dict[str, Any], Definitions, list[str]]:
    """Read ``path`` and execute its definitions here, in a fresh namespace.

    With ``roots``, only what those names need is run (as the grader does).
    """
    definitions = extract_definitions(read_code_cells(path))
    if roots is not None:
        definitions = definitions.needed_for(roots)
    namespace: dict[str, Any] = {"__name__": "submission"}
    notes = definitions.notes + execute_definitions(definitions, namespace)
    return namespace, definitions, notes
