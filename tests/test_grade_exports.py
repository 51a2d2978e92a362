"""Where grades go: nbgrader's gradebook (via nbgrader export) and Gradescope."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from attnkit_autograder.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.course import run_nbgrader, write_course_skeleton
from attnkit_autograder.gradescope import to_results

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

    graded = attnkit("grade", str(course), "--out", str(tmp_path / "out"), "--jobs", "2")
    assert graded.returncode == 0, graded.stderr
    assert "grades written to the nbgrader gradebook" in graded.stdout

    run_nbgrader(course, "export", "--to", str(tmp_path / "export.csv"))
    rows = {r["student_id"]: r for r in csv.DictReader((tmp_path / "export.csv").open())}
    assert float(rows["ada"]["raw_score"]) == 13.0
    assert float(rows["bo"]["raw_score"]) == 0.0
    assert float(rows["ada"]["max_score"]) == 13.0


def test_gradescope_autograder_runs_and_writes_results_json(tmp_path: Path) -> None:
    archive = tmp_path / "autograder.zip"
    built = attnkit("gradescope", str(archive), "--assignment", "1")
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(archive) as zipped:
        names = set(zipped.namelist())
        zipped.extractall(tmp_path / "autograder")
    assert {"setup.sh", "run_autograder", "source/pyproject.toml"} <= names
    assert any(n.startswith("source/autograder/suites/") for n in names)

    # Gradescope's layout, with this machine's environment standing in for setup.sh.
    home = tmp_path / "autograder"
    released = released_notebook(SLUG, ROOT / "assignments")
    # A wrong embed_one_hot: worth 1 point, and no other exercise uses it.
    write_notebook(
        fill_notebook(released, SLUG, {"embed_one_hot": "return E[token_ids] * 0"}),
        home / "submission" / f"{SLUG}.ipynb",
    )
    script = (home / "run_autograder").read_text()
    script = script.replace("/autograder/venv/bin/", str(Path(sys.executable).parent) + "/")
    script = script.replace("cd /autograder/source", f"cd {ROOT}")
    script = script.replace("/autograder", str(home))
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    results = json.loads((home / "results" / "results.json").read_text())
    assert results["score"] == 12.0
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert [t["name"] for t in failed] == ["embed_one_hot: test_embed_one_hot"]
    assert "wrong values" in failed[0]["output"]
    assert all(t["visibility"] == "after_published" for t in results["tests"])
    assert all({"name", "score", "max_score", "output"} <= set(t) for t in results["tests"])


def test_gradescope_results_for_an_ungradable_submission() -> None:
    record = {
        "status": "error",
        "error": "x.ipynb: is empty.",
        "score": 0.0,
        "tests": [
            {
                "exercise": "softmax",
                "grade_id": "t",
                "points": 0.0,
                "max_points": 2.0,
                "status": "error",
                "message": "is empty",
                "hint": None,
            }
        ],
    }
    results = to_results({"submissions": [record]}, "hidden")
    assert results["score"] == 0.0 and "could not be graded" in results["output"]
    assert results["tests"][0]["visibility"] == "hidden"
    assert "exactly one notebook" in to_results({"submissions": []})["output"]
