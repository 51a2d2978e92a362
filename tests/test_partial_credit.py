"""Partial credit (--partial-credit): 2 of 3 hidden tests of a 3-point cell earn 2 points, and
grades.json, Gradescope's results.json, the nbgrader gradebook, the Canvas export and the
feedback all say 2; all or nothing stays the default, with the stamps it always had."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from attnkit.outcome import FAILED, FORBIDDEN, PASSED, Outcome
from attnkit_autograder.classes.feedback import render_html, render_text
from attnkit_autograder.classes.results import write_gradebook
from attnkit_autograder.grading.options import GradeOptions, from_dict
from attnkit_autograder.grading.scoring import score_cells
from attnkit_autograder.platforms import gradescope, lms_export

SLUG = "02_self_attention"
CELL = "test_v1_forward"  # worth 3 points


def verdicts(*statuses: str) -> list[Outcome]:
    return [
        Outcome("SelfAttention_v1", f"check {i}", status, "wrong values", grade_id=CELL)
        for i, status in enumerate(statuses)
    ]


def v1_entry(partial: bool, *statuses: str) -> dict:
    (entry,) = [t for t in score_cells(SLUG, verdicts(*statuses), partial) if t["grade_id"] == CELL]
    return entry


def test_two_of_three_checks_of_a_three_point_cell() -> None:
    assert v1_entry(False, PASSED, PASSED, FAILED)["points"] == 0.0  # the default
    entry = v1_entry(True, PASSED, PASSED, FAILED)
    assert (entry["points"], entry["max_points"], entry["status"]) == (2.0, 3.0, FAILED)
    assert v1_entry(True, PASSED, FAILED, FAILED, FAILED)["points"] == 0.75
    assert v1_entry(True, PASSED, PASSED, PASSED)["points"] == 3.0
    assert v1_entry(True, PASSED, PASSED, FORBIDDEN)["points"] == 0.0  # a forbidden call: none


def record(partial: bool) -> dict:
    tests = score_cells(SLUG, verdicts(PASSED, PASSED, FAILED), partial)
    return {
        "student": "ada", "assignment": SLUG, "source": "ada.ipynb", "source_sha256": "0" * 64,
        "status": "graded", "error": None, "score": sum(t["points"] for t in tests),
        "max_score": sum(t["max_points"] for t in tests), "tests": tests, "notes": [],
    }  # fmt: skip


def test_every_output_carries_the_partial_points(tmp_path: Path) -> None:
    result = tmp_path / "out" / "results" / "ada" / f"{SLUG}.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps(record(partial=True)))
    out = tmp_path / "out"
    (row,) = write_gradebook(out, [result])
    assert row["score"] == 2.0  # only the 2 of 3 checks of test_v1_forward passed
    grades = json.loads((out / "grades.json").read_text())
    assert grades["submissions"][0]["score"] == 2.0
    results = gradescope.to_results(grades)
    assert results["score"] == 2.0
    assert [t["score"] for t in results["tests"] if t["name"].endswith(CELL)] == [2.0]
    roster = tmp_path / "roster.csv"
    roster.write_text("SIS Login ID\nada\n")
    lms_export.export(out, "canvas", roster, "blank")
    rows = list(csv.reader((out / "export-canvas.csv").open(newline="")))
    assert rows[2][-1] == "2"
    assert "2/3 (2 of 3 checks passed)" in render_text(grades["submissions"][0])
    assert "2 / 3 (2 of 3 checks passed)" in render_html(grades["submissions"][0])


def test_the_nbgrader_gradebook_gets_the_partial_points(tmp_path: Path) -> None:
    pytest.importorskip("nbgrader")
    from attnkit_autograder.authoring.released import run_nbgrader, write_course_skeleton
    from attnkit_autograder.platforms.nbgrader_gradebook import push_grades

    course = tmp_path / "course"
    write_course_skeleton(course, [SLUG])
    run_nbgrader(course, "generate_assignment", SLUG, "--force", "--create")
    assert push_grades(course, [record(partial=True)]) == []
    run_nbgrader(course, "export", "--to", str(tmp_path / "export.csv"))
    (row,) = list(csv.DictReader((tmp_path / "export.csv").open()))
    assert (row["student_id"], float(row["raw_score"])) == ("ada", 2.0)


def test_all_or_nothing_keeps_the_stamps_it_had() -> None:
    assert "partial_credit" not in GradeOptions().stamp_fields()
    assert GradeOptions(partial_credit=True).stamp_fields()["partial_credit"] is True
    recorded = GradeOptions().to_dict()
    del recorded["partial_credit"]  # a class.json written before the option
    assert from_dict(recorded) == GradeOptions()
