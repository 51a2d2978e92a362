"""Where grades go: nbgrader's gradebook, read back through nbgrader export."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.authoring.released import run_nbgrader, write_course_skeleton

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"
pytestmark = pytest.mark.slow


def attnkit(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnkit", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
    )


def test_grades_land_in_nbgraders_gradebook_and_export(tmp_path: Path) -> None:
    course = tmp_path / "course"
    write_course_skeleton(course, [SLUG])
    run_nbgrader(course, "generate_assignment", SLUG, "--force", "--create")
    released = released_notebook(SLUG, ROOT / "assignments")
    for student, notebook in (("ada", fill_notebook(released, SLUG)), ("bo", released)):
        write_notebook(notebook, course / "submitted" / student / SLUG / f"{SLUG}.ipynb")
    damaged = course / "submitted" / "cy" / SLUG / f"{SLUG}.ipynb"
    damaged.parent.mkdir(parents=True)
    damaged.write_text('{"cells": [')  # cannot be graded: never a 0 in the gradebook

    graded = attnkit("grade", str(course), "--out", str(tmp_path / "out"), "--jobs", "2")
    assert graded.returncode == 0, graded.stderr
    assert "grades written to the nbgrader gradebook" in graded.stdout
    assert "cy/01_numpy_attention: not graded" in graded.stdout

    run_nbgrader(course, "export", "--to", str(tmp_path / "export.csv"))
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "export.csv").open())}
    assert float(rows["ada"]["raw_score"]) == 13.0
    assert float(rows["bo"]["raw_score"]) == 0.0
    assert "cy" not in rows or rows["cy"]["raw_score"] in ("", None)
    assert float(rows["ada"]["max_score"]) == 13.0
