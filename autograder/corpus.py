"""Build submissions from the released notebooks: correct ones, and ones with a known mistake.

A *correct* submission is a released notebook whose stubs are replaced by the bodies of
the reference implementations (see ``attnkit_solutions.exercises``). A *buggy* one
replaces one stub with a catalogued mistake instead. The kit's tests, the grader's
corpus and the benchmark all build their submissions here, from the real student
notebooks, so they exercise exactly what students hand in.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import textwrap
from pathlib import Path
from typing import Any

from attnkit.diagnosis import Mistake, load_mistakes
from attnkit_solutions.exercises import reference_object

__all__ = ["Mistake", "add_cell", "fill_notebook", "load_mistakes", "released_notebook"]

STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")


def reference_body(slug: str, exercise: str) -> str:
    """The body of the reference answer (docstring removed), dedented to column 0."""
    source = textwrap.dedent(inspect.getsource(reference_object(slug, exercise)))
    function = ast.parse(source).body[0]
    body = function.body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    lines = source.splitlines()
    return textwrap.dedent("\n".join(lines[body[0].lineno - 1 : body[-1].end_lineno]))


def fill_stub(source: str, body: str) -> str:
    """Replace the two stub lines in a cell's source with ``body``, at the stub's indentation."""
    lines = source.splitlines()
    for index, line in enumerate(lines[:-1]):
        if line.strip() == STUB[0] and lines[index + 1].strip() == STUB[1]:
            indent = line[: len(line) - len(line.lstrip())]
            filled = [indent + b if b.strip() else "" for b in body.splitlines()]
            return "\n".join(lines[:index] + filled + lines[index + 2 :])
    raise ValueError("no stub (# YOUR CODE HERE / raise NotImplementedError()) in this cell")


def released_notebook(slug: str, assignments_dir: Path) -> dict[str, Any]:
    return json.loads((assignments_dir / slug / f"{slug}.ipynb").read_text(encoding="utf-8"))


def fill_notebook(
    notebook: dict[str, Any], slug: str, overrides: dict[str, str] | None = None
) -> dict[str, Any]:
    """A copy of ``notebook`` with every stub answered: by ``overrides[exercise]`` if given,
    else by the reference body. An override of None leaves that stub unanswered."""
    overrides = overrides or {}
    filled = copy.deepcopy(notebook)
    for cell in filled["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("solution") or cell["cell_type"] != "code":
            continue
        exercise = meta["grade_id"]
        body = overrides[exercise] if exercise in overrides else reference_body(slug, exercise)
        if body is None:
            continue
        source = "".join(cell["source"])
        cell["source"] = fill_stub(source, body).splitlines(keepends=True)
    return filled


def write_notebook(notebook: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# -- editing notebooks (the hostile corpus, attnkit_autograder.hostile, builds on these) --------


def add_cell(notebook: dict[str, Any], source: str, index: int | None = None) -> dict[str, Any]:
    """A copy of ``notebook`` with a code cell holding ``source`` at ``index`` (default: last)."""
    changed = copy.deepcopy(notebook)
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }
    changed["cells"].insert(len(changed["cells"]) if index is None else index, cell)
    return changed


def drop_cells(notebook: dict[str, Any], keep: Any) -> dict[str, Any]:
    changed = copy.deepcopy(notebook)
    changed["cells"] = [c for c in changed["cells"] if keep(c)]
    return changed


def to_nbformat3(notebook: dict[str, Any]) -> dict[str, Any]:
    cells = [
        {"cell_type": "code", "input": c["source"], "language": "python", "outputs": []}
        for c in notebook["cells"]
        if c["cell_type"] == "code"
    ]
    return {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": cells}]}
