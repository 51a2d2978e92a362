"""Every property a hidden test enforces is stated in the exercise's released docstring.

Each hidden test declares, with ``@contract(exercise, *clauses)``, the clauses of the
contract it checks. This test reads the student notebooks in ``assignments/`` and asserts
that every clause appears there, word for word (whitespace and case aside), in the
docstring of that exercise (for a class: its docstring and ``forward``'s). A hidden test
without a declaration fails here too, so a new check cannot slip in unstated.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from attnkit.assignments import ASSIGNMENTS

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "autograder" / "suites"


def normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def released_docstrings(slug: str) -> dict[str, str]:
    """Exercise name -> its docstring(s) in the student notebook, normalised."""
    notebook = json.loads((ROOT / "assignments" / slug / f"{slug}.ipynb").read_text("utf-8"))
    found: dict[str, str] = {}
    for cell in notebook["cells"]:
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


def hidden_tests(slug: str) -> list[tuple[str, list[tuple[str, ...]]]]:
    """(test name, its contract declarations) for every test of the hidden suite, read
    from the suite's source (``@contract`` takes string literals only)."""
    tree = ast.parse((SUITES / f"test_{slug}.py").read_text(encoding="utf-8"))
    tests = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            marks = [
                tuple(ast.literal_eval(arg) for arg in decorator.args)
                for decorator in node.decorator_list
                if isinstance(decorator, ast.Call)
                and isinstance(decorator.func, ast.Name)
                and decorator.func.id == "contract"
            ]
            tests.append((node.name, marks))
    return tests


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_every_hidden_test_declares_clauses_the_docstring_states(slug: str) -> None:
    docstrings = released_docstrings(slug)
    tests = hidden_tests(slug)
    assert tests, f"no hidden tests found for {slug}"
    problems = []
    for name, marks in tests:
        if not marks:
            problems.append(f"{name} declares no contract clause")
        for exercise, *clauses in marks:
            if exercise not in docstrings:
                problems.append(f"{name}: {exercise} has no docstring in the released notebook")
                continue
            problems += [
                f"{name}: {exercise}'s docstring does not state {clause!r}"
                for clause in clauses
                if normal(clause) not in docstrings[exercise]
            ]
    assert problems == []


def test_every_exercise_states_its_contract() -> None:
    """Each exercise's released docstring has a Contract section."""
    for slug, assignment in ASSIGNMENTS.items():
        docstrings = released_docstrings(slug)
        for exercise in assignment.exercises:
            assert "contract:" in docstrings.get(exercise.name, ""), (slug, exercise.name)


def test_the_lesson_1_dtype_contracts_are_stated() -> None:
    docstrings = released_docstrings("01_numpy_attention")
    assert "same shape and dtype as x (float32 stays float32)" in docstrings["softmax"]
    assert "with the dtype of e (float32 stays float32)" in docstrings["embed_one_hot"]
