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
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit_solutions.exercises import reference_answer

from ..grading.catalogue import Mistake, load_mistakes
from .released import released_path

__all__ = [
    "CorpusCase",
    "Mistake",
    "add_cell",
    "case_notebook",
    "fill_notebook",
    "load_mistakes",
    "read_case",
    "released_notebook",
]

STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")


def reference_body(slug: str, exercise: str) -> str:
    """The body of the reference answer (docstring removed), dedented to column 0."""
    found = reference_answer(slug, exercise)
    if found is None:
        raise KeyError(f"no reference declares {exercise!r} in {slug} (use @exercise)")
    return found["code"]


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
    """Lesson ``slug`` as released in ``assignments_dir`` (as committed, when the working
    tree's file was filled in or run: see :func:`released_path`)."""
    return json.loads(released_path(slug, assignments_dir).read_text(encoding="utf-8"))


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


# -- editing notebooks (the demo, and the kit's hostile corpus, build on these) ----------------


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


# -- the independent diagnosis corpus -----------------------------------------------------------
#
# tests/corpus/mistakes/*.py hold buggy (and correct) answers written apart from the
# catalogue. Each file is plain Python: a header, then for each exercise it answers a
# function of the exercise's name (or a class of that name with a ``forward``), whose
# body replaces the exercise's stub. Every other exercise gets the reference answer.
#
#     # assignment: 03_causal_attention
#     # expect: apply_causal_mask=mask_with_zero    (or "none", or "correct")
#     def apply_causal_mask(scores):
#         ...


@dataclass(frozen=True)
class CorpusCase:
    """One submission of the corpus and what its diagnosis must be."""

    name: str
    slug: str
    expect: str
    """``exercise=mistake_id``: that mistake must be named there and nothing else anywhere;
    ``none``: a mistake outside the catalogue, so nothing may be named; ``correct``: full
    marks and no hint at all."""
    answers: dict[str, str]

    @property
    def expected(self) -> tuple[str, str] | None:
        """(exercise, mistake id) for a catalogued mistake, else None."""
        if "=" not in self.expect:
            return None
        exercise, mistake = self.expect.split("=", 1)
        return exercise.strip(), mistake.strip()


def read_case(path: Path) -> CorpusCase:
    """Parse one corpus file; a missing header or a stray definition is an error here."""
    text = path.read_text(encoding="utf-8")
    header = dict(
        line[1:].strip().split(":", 1)
        for line in text.splitlines()
        if line.startswith("# ") and ":" in line[:20]
    )
    try:
        slug, expect = header["assignment"].strip(), header["expect"].strip()
    except KeyError as exc:
        raise ValueError(f"{path}: the header needs '# {exc.args[0]}: ...'") from None
    return CorpusCase(path.stem, slug, expect, answers_in(text, str(path)))


def catalogue_cases() -> list[CorpusCase]:
    """The catalogue's own student-style cases: each mistake's ``student`` definitions,
    expected to be named as that mistake."""
    return [
        CorpusCase(
            f"{m.assignment}-{m.id}-{m.exercise}",
            m.assignment,
            f"{m.exercise}={m.id}",
            answers_in(textwrap.dedent(m.student), f"{m.assignment}/{m.id}"),
        )
        for m in load_mistakes()
        if m.student
    ]


def answers_in(text: str, where: str) -> dict[str, str]:
    """The body of each function, and of each class's ``forward``, that ``text`` defines."""
    answers = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            methods = [
                n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "forward"
            ]
            if not methods:
                raise ValueError(f"{where}: class {node.name} has no forward method")
            answers[node.name] = definition_body(text, methods[0])
        elif isinstance(node, ast.FunctionDef):
            answers[node.name] = definition_body(text, node)
    if not answers:
        raise ValueError(f"{where}: answers no exercise")
    return answers


def definition_body(text: str, function: ast.FunctionDef) -> str:
    """The source of a function's body, dedented to column 0."""
    lines = text.splitlines()
    return textwrap.dedent(
        "\n".join(lines[function.body[0].lineno - 1 : function.body[-1].end_lineno])
    )


def case_notebook(case: CorpusCase, assignments_dir: Path) -> dict[str, Any]:
    """The released notebook with the case's answers, and the references everywhere else."""
    return fill_notebook(released_notebook(case.slug, assignments_dir), case.slug, case.answers)
