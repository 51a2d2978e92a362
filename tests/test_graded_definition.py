"""Which definition is graded: the last one, and the one live at its graded cell, the better."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.grading.pipeline import GradeSettings, grade_submission
from attnkit_autograder.grading.submission import Submission
from attnkit_autograder.sandbox.zygote import discard_zygote

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"
pytestmark = pytest.mark.slow

BROKEN_LATER = (
    "def scale_scores(scores, d_k):\n    return scores  # an experiment left at the end\n"
)


def grade(tmp_path: Path, notebook: dict) -> dict:
    path = write_notebook(notebook, tmp_path / f"student_{SLUG}.ipynb")
    try:
        return grade_submission(Submission("student", SLUG, path), GradeSettings())
    finally:
        discard_zygote()


def scale_cell(record: dict) -> dict:
    return next(t for t in record["tests"] if t["grade_id"] == "test_scale_scores")


def test_a_broken_redefinition_below_the_graded_cell_costs_nothing(tmp_path) -> None:
    notebook = fill_notebook(released_notebook(SLUG, ROOT / "assignments"), SLUG)
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "source": BROKEN_LATER})
    record = grade(tmp_path, notebook)
    assert scale_cell(record)["status"] == "passed"
    assert record["score"] == record["max_score"]


def test_without_its_graded_cell_the_last_definition_is_graded(tmp_path) -> None:
    notebook = fill_notebook(released_notebook(SLUG, ROOT / "assignments"), SLUG)
    notebook["cells"] = [
        c
        for c in notebook["cells"]
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != "test_scale_scores"
    ]
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "source": BROKEN_LATER})
    record = grade(tmp_path, notebook)
    assert scale_cell(record)["status"] == "failed"
