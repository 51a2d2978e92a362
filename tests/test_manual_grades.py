"""Points and comments given by hand in nbgrader's formgrader reach the exports and the class
report, added to the kit's automatic points (a manual score replaces its cell's automatic
one, as nbgrader counts it); the kit's own gradebook writes never overwrite them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from attnkit_autograder.classes import run_manifest
from attnkit_autograder.classes.results import write_gradebook
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.lessons.rubric import graded_cells
from attnkit_autograder.platforms import class_report, lms_export

SLUG = "02_self_attention"


def record() -> dict:
    """Every cell passed but test_v1_forward (3 points): 11 of 14."""
    tests = [
        {"grade_id": c.grade_id, "exercise": c.exercise, "max_points": c.points,
         "points": 0.0 if c.grade_id == "test_v1_forward" else c.points,
         "status": "failed" if c.grade_id == "test_v1_forward" else "passed",
         "message": "", "hint": None, "checks_passed": 0, "checks_total": 1, "diagnosis": None}
        for c in graded_cells(SLUG)
    ]  # fmt: skip
    return {
        "student": "ada", "assignment": SLUG, "source": "ada.ipynb", "source_sha256": "0" * 64,
        "status": "graded", "error": None, "score": sum(t["points"] for t in tests),
        "max_score": sum(t["max_points"] for t in tests), "tests": tests, "notes": [],
    }  # fmt: skip


def test_manual_points_and_comments_reach_the_export_and_the_report(tmp_path: Path) -> None:
    pytest.importorskip("nbgrader")
    from nbgrader.api import Gradebook

    from attnkit_autograder.authoring.released import run_nbgrader, write_course_skeleton
    from attnkit_autograder.platforms.nbgrader_gradebook import push_grades

    course = tmp_path / "course"
    write_course_skeleton(course, [SLUG])
    run_nbgrader(course, "generate_assignment", SLUG, "--force", "--create")
    out = tmp_path / "out"
    result = out / "results" / "ada" / f"{SLUG}.json"
    result.parent.mkdir(parents=True)
    result.write_text(json.dumps(record()))
    (row,) = write_gradebook(out, [result])
    assert row["score"] == 11.0
    options = GradeOptions(gradebook=str(course))
    run_manifest.write(out, run_manifest.of_run(course, None, options, [], None))
    assert push_grades(course, [row]) == []
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        notebook = gradebook.find_submission_notebook(SLUG, SLUG, "ada")
        (v1,) = [g for g in notebook.grades if g.name == "test_v1_forward"]
        v1.manual_score = 2.5  # the TA gives 2.5 of 3 by hand
        notebook.comments[0].manual_comment = "Right idea; the bias was missing."
        gradebook.db.commit()
    assert push_grades(course, [row]) == []  # grading again keeps the manual score

    roster = tmp_path / "roster.csv"
    roster.write_text("SIS Login ID\nada\n")
    lms_export.export(out, "canvas", roster, "blank")
    rows = list(csv.reader((out / "export-canvas.csv").open(newline="")))
    assert rows[2][-1] == "13.5"  # 11 automatic + 2.5 by hand
    beside = list(csv.reader((out / "export-canvas-manual.csv").open(newline="")))
    assert beside[1][2:] == ["ada", SLUG, "2.5", "Right idea; the bias was missing."]
    page = class_report.render(out, review_similarity=False)
    assert "Graded by hand (nbgrader)" in page and "+2.5" in page
    assert "Right idea; the bias was missing." in page
