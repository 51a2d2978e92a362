"""Each step of grading one submission, on its own (see attnkit_autograder.grading.pipeline)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnkit.outcome import FAILED, INTERNAL, PASSED, Outcome
from attnkit_autograder.grading.pipeline import (
    GradeSettings,
    Grading,
    Ungradable,
    grade_submission,
    graded_record,
    read_notebook,
    refuse_grader_faults,
    score,
)
from attnkit_autograder.grading.submission import Submission
from attnkit_autograder.lessons.rubric import graded_cells

SLUG = "01_numpy_attention"


def notebook(path: Path, *sources: str) -> Path:
    cells = [{"cell_type": "code", "metadata": {}, "source": s, "outputs": []} for s in sources]
    path.write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})
    )
    return path


def grading(path: Path, slug: str | None = SLUG, problem: str | None = None) -> Grading:
    return Grading(Submission("kim", slug, path, problem=problem), GradeSettings())


@pytest.mark.parametrize(
    ("slug", "problem", "sources", "reason"),
    [
        (SLUG, "two files for one assignment", ("x = 1",), "two files for one assignment"),
        ("99_nothing", None, ("x = 1",), "unknown assignment '99_nothing'"),
        (SLUG, None, ("# only a comment", "   "), "defines nothing"),
    ],
)
def test_reading_refuses_what_cannot_be_graded(tmp_path, slug, problem, sources, reason) -> None:
    path = notebook(tmp_path / "kim.ipynb", *sources)
    with pytest.raises(Ungradable) as refused:
        read_notebook(grading(path, slug, problem))
    assert reason in refused.value.reason
    assert refused.value.fault == "submission"


def test_reading_a_damaged_file_is_the_submissions_fault(tmp_path) -> None:
    path = tmp_path / "kim.ipynb"
    path.write_bytes(b'{"cells": [')
    with pytest.raises(Ungradable) as refused:
        read_notebook(grading(path))
    assert "is not valid notebook JSON" in refused.value.reason


def test_reading_keeps_the_code_cells_and_charges_the_time(tmp_path) -> None:
    path = notebook(tmp_path / "kim.ipynb", "import numpy as np", "def softmax(x):\n    pass")
    state = grading(path)
    read_notebook(state)
    assert [c.source.split("\n")[0] for c in state.cells] == [
        "import numpy as np",
        "def softmax(x):",
    ]
    assert "reading" in state.phases


def verdicts(status_of: dict[str, str]) -> list[Outcome]:
    """One hidden-test verdict per graded cell: PASSED unless ``status_of`` says otherwise."""
    return [
        Outcome(c.exercise, f"test_{c.grade_id}", status_of.get(c.grade_id, PASSED), "why",
                grade_id=c.grade_id)
        for c in graded_cells(SLUG)
    ]  # fmt: skip


def test_a_test_the_reference_fails_too_refuses_to_score(tmp_path) -> None:
    state = grading(tmp_path / "kim.ipynb")
    first = graded_cells(SLUG)[0].grade_id
    state.verdicts = verdicts({first: INTERNAL})
    with pytest.raises(Ungradable) as refused:
        refuse_grader_faults(state)
    assert refused.value.fault == "grader"
    state.verdicts = verdicts({first: FAILED})
    refuse_grader_faults(state)  # a student's failure is scored, not refused


def test_scoring_gives_a_cell_its_points_only_when_all_its_tests_pass(tmp_path) -> None:
    state = grading(tmp_path / "kim.ipynb")
    cells = graded_cells(SLUG)
    state.verdicts = verdicts({cells[0].grade_id: FAILED})
    score(state)
    points = {t["grade_id"]: t["points"] for t in state.tests}
    assert points[cells[0].grade_id] == 0.0
    assert all(points[c.grade_id] == c.points for c in cells[1:])


def test_the_record_adds_up_the_cells(tmp_path) -> None:
    path = notebook(tmp_path / "kim.ipynb", "x = 1")
    state = grading(path)
    state.verdicts = verdicts({graded_cells(SLUG)[0].grade_id: FAILED})
    score(state)
    record = graded_record(state)
    assert record["status"] == "graded"
    assert record["max_score"] == sum(c.points for c in graded_cells(SLUG))
    assert record["score"] == record["max_score"] - graded_cells(SLUG)[0].points
    assert set(record["run"]) >= {"seconds", "phases"}


def test_an_ungradable_submission_leaves_by_one_exit_as_an_error_record(tmp_path) -> None:
    path = notebook(tmp_path / "kim.ipynb", "# nothing here")
    record = grade_submission(Submission("kim", SLUG, path), GradeSettings())
    assert record["status"] == "error"
    assert "defines nothing" in record["error"]
    assert record["score"] == 0.0
    assert "fault" not in record
