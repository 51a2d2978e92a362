"""Points per graded cell, read from the nbgrader source notebooks.

The source notebooks are the one place where points are set; the grader, the
Gradescope export and the kit's tests all read them from there.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import attnkit_solutions

NOTEBOOKS = Path(attnkit_solutions.__file__).resolve().parent / "notebooks"


def source_notebook(slug: str) -> Path:
    return NOTEBOOKS / f"{slug}.ipynb"


@functools.cache
def load_rubric(slug: str) -> dict[str, float]:
    """{grade_id: points} for every graded (test) cell of the assignment, in notebook order."""
    notebook = json.loads(source_notebook(slug).read_text(encoding="utf-8"))
    rubric = {}
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and cell["cell_type"] == "code":
            rubric[meta["grade_id"]] = float(meta["points"])
    return rubric
