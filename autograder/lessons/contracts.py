"""Each exercise's contract: the docstrings of its definition in a lesson's notebook.

The released notebook states the contract a student writes to; the source notebook
carries the same docstrings. Hidden tests declare which clauses they enforce
(``suite_support.contract``); mutation testing breaks each clause it can name
(``quality.clause_mutants``).
"""

from __future__ import annotations

import ast
import functools
import json
import re
from pathlib import Path

from .rubric import source_notebook

DTYPE_WORD = re.compile(r"\bdtypes?\b|\bfloat(?:16|32|64)\b|\bbool\b")
"""A mention of a dtype."""
RETURNS = re.compile(r"\breturns\b|->")
"""Where a contract starts to speak of what an exercise returns: a dtype mentioned after it
is a promise about the result; one before it describes an argument."""


def normal(text: str) -> str:
    """Whitespace collapsed, lower case: how clauses are matched against a docstring."""
    return re.sub(r"\s+", " ", text).strip().lower()


def docstrings(notebook: Path) -> dict[str, str]:
    """Exercise name -> the docstrings of its definition (a class's and its ``forward``'s),
    normalised, for every definition in the notebook's solution cells."""
    cells = json.loads(notebook.read_text("utf-8"))["cells"]
    found: dict[str, str] = {}
    for cell in cells:
        if cell["cell_type"] != "code" or not cell["metadata"].get("nbgrader", {}).get("solution"):
            continue
        for node in ast.parse("".join(cell["source"])).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                parts = [ast.get_docstring(node) or ""]
                if isinstance(node, ast.ClassDef):
                    parts += [
                        ast.get_docstring(n) or ""
                        for n in node.body
                        if isinstance(n, ast.FunctionDef) and n.name == "forward"
                    ]
                found[node.name] = normal(" ".join(parts))
    return found


@functools.cache
def contracts(slug: str) -> dict[str, str]:
    """The lesson's contracts, from its source notebook (installed with the kit)."""
    return docstrings(source_notebook(slug))


def returned_dtypes(docstring: str) -> list[str]:
    """The dtype words a contract uses of what the exercise returns."""
    start = RETURNS.search(docstring)
    return [] if start is None else DTYPE_WORD.findall(docstring, start.start())
