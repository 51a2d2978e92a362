"""Points per graded cell, read from the nbgrader source notebooks.

The source notebooks are the one place where points are set; the grader, the
Gradescope export and the kit's tests all read them from there.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path


def _solutions_folder() -> Path:
    # Located without importing the package: importing it would load torch into processes
    # (such as the one coordinating `attnkit grade`) that only need the notebooks' points.
    spec = importlib.util.find_spec("attnkit_solutions")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("attnkit_solutions is not installed", name="attnkit_solutions")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


NOTEBOOKS = _solutions_folder() / "notebooks"


def source_notebook(slug: str) -> Path:
    return NOTEBOOKS / f"{slug}.ipynb"


@dataclass(frozen=True)
class GradedCell:
    grade_id: str
    points: float
    exercise: str
    """The exercise whose solution cell comes before this graded cell."""


HIDDEN_BLOCK = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.S)


def cell_text(source: str) -> str:
    """A cell's code as compared across editors: its lines that are not comments, line
    endings and trailing spaces aside (a ``.py`` export adds the next markdown cell to a
    code cell as comments); for a cell of comments only, its first line."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").split("\n")]
    code = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if code:
        return "\n".join(code)
    return next((line.strip() for line in lines if line.strip()), "")


@functools.cache
def released_graded_sources(slug: str) -> dict[str, str]:
    """Each graded cell's code as released (the hidden tests' block taken out), to its
    grade id: how a graded cell is recognised in a notebook whose editor dropped nbgrader's
    metadata, or in a ``.py`` export."""
    notebook = json.loads(source_notebook(slug).read_text(encoding="utf-8"))
    found = {}
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and cell["cell_type"] == "code":
            text = cell_text(HIDDEN_BLOCK.sub("", "".join(cell["source"])))
            if text:
                found[text] = meta["grade_id"]
    return found


@functools.cache
def graded_cells(slug: str) -> tuple[GradedCell, ...]:
    """Every graded (test) cell of the assignment, in notebook order."""
    notebook = json.loads(source_notebook(slug).read_text(encoding="utf-8"))
    cells, exercise = [], ""
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("solution"):
            exercise = meta["grade_id"]
        elif meta.get("grade") and cell["cell_type"] == "code":
            cells.append(GradedCell(meta["grade_id"], float(meta["points"]), exercise))
    return tuple(cells)


def load_rubric(slug: str) -> dict[str, float]:
    """{grade_id: points} for every graded cell of the assignment, in notebook order."""
    return {cell.grade_id: cell.points for cell in graded_cells(slug)}
