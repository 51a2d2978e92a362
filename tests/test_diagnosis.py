"""Every catalogued mistake is named: by the grader (isolated) and, where visible checks see
it, by the self-check. Correct work never gets a mistake hint."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from attnkit.assignments import ASSIGNMENTS
from attnkit.implementation import LocalImplementation
from attnkit.notebook_run import load_definitions
from attnkit.selfcheck import run_exercise
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.classes.results import result_paths, write_gradebook
from attnkit_autograder.classes.supervisor import grade_all
from attnkit_autograder.grading.catalogue import load_mistakes
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings

ROOT = Path(__file__).resolve().parents[1]
MISTAKES = load_mistakes()


def test_catalogue_entries_are_complete_and_unique() -> None:
    keys = [m.key for m in MISTAKES]
    assert len(keys) == len(set(keys))
    for mistake in MISTAKES:
        assert mistake.exercise in {e.name for e in ASSIGNMENTS[mistake.assignment].exercises}
        assert mistake.title and mistake.symptom and mistake.hint and mistake.code


@pytest.fixture(scope="module")
def graded_mistakes(tmp_path_factory):
    """One submission per catalogued mistake, plus one correct per assignment, graded once."""
    tmp = tmp_path_factory.mktemp("mistakes")
    for index, mistake in enumerate(MISTAKES):
        released = released_notebook(mistake.assignment, ROOT / "assignments")
        notebook = fill_notebook(released, mistake.assignment, {mistake.exercise: mistake.code})
        write_notebook(notebook, tmp / "subs" / f"m{index:02d}_{mistake.assignment}.ipynb")
    for slug in ASSIGNMENTS:
        correct = fill_notebook(released_notebook(slug, ROOT / "assignments"), slug)
        write_notebook(correct, tmp / "subs" / f"correct_{slug}.ipynb")
    settings = GradeSettings(GradeOptions(timeout=10.0, budget=120.0))
    grade_all(discover(tmp / "subs"), tmp / "out", settings, jobs=2)
    return {
        (r["student"], r["assignment"]): r
        for r in write_gradebook(tmp / "out", result_paths(tmp / "out"))
    }


@pytest.mark.slow
def test_the_grader_names_every_catalogued_mistake(graded_mistakes) -> None:
    named, missed = 0, []
    for index, mistake in enumerate(MISTAKES):
        record = graded_mistakes[(f"m{index:02d}", mistake.assignment)]
        cells = [t for t in record["tests"] if t["exercise"] == mistake.exercise]
        failing = [t for t in cells if t["status"] != "passed"]
        diagnosed = {t["diagnosis"]["id"] for t in failing if t["diagnosis"]}
        assert failing, f"{mistake.key} passed every hidden test"
        assert diagnosed <= {mistake.id}, f"{mistake.key} was named {diagnosed}"
        if diagnosed == {mistake.id}:
            named += 1
            assert all(t["hint"] == mistake.hint for t in failing if t["diagnosis"])
        else:
            missed.append(mistake.key)
    print(f"\ngrader diagnosis rate: {named}/{len(MISTAKES)} ({100 * named / len(MISTAKES):.0f}%)")
    assert missed == []


@pytest.mark.slow
def test_correct_submissions_get_full_marks_and_no_mistake_hint(graded_mistakes) -> None:
    for slug in ASSIGNMENTS:
        record = graded_mistakes[("correct", slug)]
        assert record["score"] == record["max_score"]
        assert all(t["diagnosis"] is None and t["hint"] is None for t in record["tests"])


def test_self_check_names_what_the_visible_checks_catch(tmp_path) -> None:
    """Where a mistake fails a visible check, the self-check names it, and never wrongly."""
    named, caught = 0, 0
    for mistake in MISTAKES:
        released = released_notebook(mistake.assignment, ROOT / "assignments")
        notebook = fill_notebook(released, mistake.assignment, {mistake.exercise: mistake.code})
        path = write_notebook(notebook, tmp_path / f"{mistake.id}.ipynb")
        with contextlib.redirect_stdout(io.StringIO()):
            namespace, _, _ = load_definitions(path)
        results = run_exercise(LocalImplementation(namespace), mistake.assignment, mistake.exercise)
        if all(r.status == "passed" for r in results):
            continue
        caught += 1
        names = {r.diagnosis for r in results if r.diagnosis}
        assert names <= {mistake.title}, f"{mistake.key} was named {names}"
        named += names == {mistake.title}
    print(f"\nself-check: {caught}/{len(MISTAKES)} caught by visible checks, {named} named")
    assert caught >= len(MISTAKES) - 5 and named >= caught - 3


def test_two_errors_of_one_type_are_not_the_same_answer() -> None:
    """A mistake program that is right about the values it returns but raises another
    error than the submission (same type, other message) did not make the submission's
    mistake: it is not named, whatever the type."""
    import numpy as np

    from attnkit.diagnosis import explains
    from attnkit.implementation import Answer

    def value(x: float) -> Answer:
        return Answer({"out": {"kind": "array", "array": np.array([x])}}, None)

    shape_error = Answer(None, "RuntimeError", "mat1 and mat2 shapes cannot be multiplied (2x3)")
    other_error = Answer(None, "RuntimeError", "expected scalar type Float but found Double")
    correct = [value(1.0), value(2.0)]
    submission = [value(5.0), shape_error]
    assert explains(submission, correct, [value(5.0), shape_error])
    assert not explains(submission, correct, [value(5.0), other_error])
    # Only a type in common, and no value: never evidence.
    assert not explains([shape_error], [value(1.0)], [Answer(None, "RuntimeError", "other")])
