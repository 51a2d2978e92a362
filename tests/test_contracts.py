"""Every property a hidden test enforces is stated in the exercise's released docstring.

Each hidden test declares, with ``@contract(exercise, *clauses)``, the clauses of the
contract it checks. This test reads the student notebooks in ``assignments/`` and asserts
that every clause appears there, word for word (whitespace and case aside), in the
docstring of that exercise (for a class: its docstring and ``forward``'s). A hidden test
without a declaration fails here too, so a new check cannot slip in unstated.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnkit.assignments import ASSIGNMENTS
from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.lessons.contracts import DTYPE_WORD, RETURNS, docstrings, normal

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ROOT / "autograder" / "lessons"


def released_docstrings(slug: str) -> dict[str, str]:
    """Exercise name -> its docstring(s) in the student notebook, normalised."""
    return docstrings(released_path(slug, ROOT / "assignments"))


def hidden_tests(slug: str) -> list[tuple[str, list[tuple[str, ...]]]]:
    """(test name, its contract declarations) for every test of the hidden suite, read
    from the suite's source (``@contract`` takes string literals only)."""
    tree = ast.parse((LESSONS / f"l{slug}" / "hidden_tests.py").read_text(encoding="utf-8"))
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


# -- dtype clauses: each one is checked visibly, before grading, and by the hidden suite -------


# A dtype clause is a mention of a dtype in what an exercise returns (after "returns" or
# "->"); what it is given ("mask: ... bool", "x: a float array") is a precondition.
def dtype_clauses(docstring: str) -> list[tuple[int, str]]:
    """(position, the words around it) of every dtype mention in a normalised docstring's
    returned values."""
    start = RETURNS.search(docstring)
    if start is None:
        return []
    return [
        (m.start(), docstring[max(0, m.start() - 40) : m.end() + 30])
        for m in DTYPE_WORD.finditer(docstring, start.start())
    ]


def covered(docstring: str, position: int, clauses: list[str]) -> bool:
    """Whether some declared clause spans ``position`` where it occurs in the docstring."""
    for clause in map(normal, clauses):
        at = docstring.find(clause)
        while at != -1:
            if at <= position < at + len(clause):
                return True
            at = docstring.find(clause, at + 1)
    return False


def uncovered_dtype_clauses(
    docstrings: dict[str, str], declared: dict[str, list[str]]
) -> list[str]:
    """'exercise: ...words...' for every dtype clause that no declared clause spans."""
    return [
        f"{exercise}: ...{words}..."
        for exercise, docstring in docstrings.items()
        for position, words in dtype_clauses(docstring)
        if not covered(docstring, position, declared.get(exercise, []))
    ]


def visible_declarations(slug: str) -> dict[str, list[str]]:
    from attnkit.selfcheck import visible_checks

    return {
        exercise.name: [c for check in visible_checks(slug, exercise.name) for c in check.contract]
        for exercise in ASSIGNMENTS[slug].exercises
    }


def hidden_declarations(slug: str) -> dict[str, list[str]]:
    declared: dict[str, list[str]] = {}
    for _, marks in hidden_tests(slug):
        for exercise, *clauses in marks:
            declared.setdefault(exercise, []).extend(clauses)
    return declared


def test_the_dtype_clauses_are_found() -> None:
    found = {
        (slug, exercise): len(dtype_clauses(docstring))
        for slug in ASSIGNMENTS
        for exercise, docstring in released_docstrings(slug).items()
        if dtype_clauses(docstring)
    }
    # Every exercise that returns arrays states their dtype: at least the 17 exercises and
    # 21 mentions of the four lessons as written (a new exercise may add to them).
    assert len(found) >= 17, found
    assert sum(found.values()) >= 21, found
    # "same shape and dtype as x (float32 stays float32)": dtype, float32, float32.
    assert found[("01_numpy_attention", "softmax")] == 3
    assert ("03_causal_attention", "ScaledDotProductAttention") in found


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_every_dtype_clause_has_a_visible_check(slug: str) -> None:
    """A student sees every dtype requirement fail in ``lesson.check`` before grading."""
    assert uncovered_dtype_clauses(released_docstrings(slug), visible_declarations(slug)) == []


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_every_dtype_clause_is_graded(slug: str) -> None:
    assert uncovered_dtype_clauses(released_docstrings(slug), hidden_declarations(slug)) == []


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_every_visible_declaration_is_a_clause_the_docstring_states(slug: str) -> None:
    docstrings = released_docstrings(slug)
    stray = [
        f"{exercise}: {clause!r}"
        for exercise, clauses in visible_declarations(slug).items()
        for clause in clauses
        if normal(clause) not in docstrings.get(exercise, "")
    ]
    assert stray == []


def test_an_unchecked_dtype_clause_is_reported() -> None:
    docstrings = {
        "f": normal("Contract: x: a bool mask. returns: a float32 array of the dtype of x.")
    }
    # "float32" and "dtype" are returned; "a bool mask" is the input's precondition.
    assert len(uncovered_dtype_clauses(docstrings, {})) == 2
    half = {"f": ["a float32 array"]}
    assert len(uncovered_dtype_clauses(docstrings, half)) == 1
    assert uncovered_dtype_clauses(docstrings, {"f": ["a float32 array of the dtype of x"]}) == []


# -- the references keep their own contracts ---------------------------------------------------


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_every_reference_passes_every_visible_check(slug: str) -> None:
    """Each reference, run against its exercise's visible checks: every clause they declare
    (every dtype clause among them) holds for the reference too, not only for students."""
    from attnkit.implementation import LocalImplementation
    from attnkit.selfcheck import run_exercise
    from attnkit_solutions.exercises import reference_namespace

    references = LocalImplementation(reference_namespace(slug), label="reference")
    failed = [
        f"{o.exercise}: {o.check}: {o.status} {o.message}"
        for exercise in ASSIGNMENTS[slug].exercises
        for o in run_exercise(references, slug, exercise.name)
        if o.status != "passed"
    ]
    assert failed == []
    declared = visible_declarations(slug)
    assert uncovered_dtype_clauses(released_docstrings(slug), declared) == []


STATE_CLAUSES = ("not modified", "detached")
"""Clauses about what an exercise leaves alone: its inputs, the autograd graph."""


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_every_input_and_graph_clause_is_graded(slug: str) -> None:
    """A docstring that promises its inputs are not modified, or that what it keeps is
    detached, has a hidden test that declares (and checks) the promise."""
    declared = hidden_declarations(slug)
    missing = [
        f"{exercise}: {clause!r}"
        for exercise, docstring in released_docstrings(slug).items()
        for clause in STATE_CLAUSES
        if clause in docstring and not any(clause in normal(c) for c in declared.get(exercise, []))
    ]
    assert missing == []
