"""The course loop with the real nbgrader: init, zip_collect, autograde (both graders),
generate_feedback, export. On honest submissions the two graders agree on every graded
cell; a submission that patches numpy in its kernel fools nbgrader but not attnkit grade."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit_autograder.authoring.corpus import (
    add_cell,
    fill_notebook,
    reference_body,
    released_notebook,
    write_notebook,
)
from attnkit_autograder.authoring.released import run_nbgrader, scripts_on_path
from attnkit_autograder.grading.catalogue import mistakes_for
from attnkit_autograder.platforms.course import init_course

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"
pytestmark = pytest.mark.slow
PATCH_NUMPY = (
    "import numpy\n"
    "numpy.abs = lambda a, *args, **kwargs: a * 0\n"
    "numpy.isfinite = lambda a, *args, **kwargs: numpy.ones(numpy.shape(a), dtype=bool)\n"
)


def submissions() -> dict[str, dict]:
    released = released_notebook(SLUG, ROOT / "assignments")
    warned = "import warnings\nwarnings.warn('this softmax is slow')\n" + reference_body(
        SLUG, "softmax"
    )
    mistake = {m.exercise: m for m in mistakes_for(SLUG, "scale_scores")}["scale_scores"]
    embed = mistakes_for(SLUG, "embed_one_hot")[0]
    cheat = fill_notebook(released, SLUG, {"softmax": "return x"})
    return {
        "ada": fill_notebook(released, SLUG),
        "ben": fill_notebook(released, SLUG, {"softmax": warned}),
        "cy": fill_notebook(released, SLUG, {mistake.exercise: mistake.code}),
        "dee": fill_notebook(released, SLUG, {embed.exercise: embed.code}),
        "eli": released,
        "fox": add_cell(cheat, PATCH_NUMPY, index=2),  # dishonest: runs before the test cells
    }


def nbgrader_cell_scores(course: Path) -> dict[str, dict[str, float]]:
    from nbgrader.api import Gradebook

    os.environ.update(scripts_on_path())  # the Gradebook runs `alembic` by name

    scores: dict[str, dict[str, float]] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for submission in gradebook.assignment_submissions(SLUG):
            notebook = submission.notebooks[0]
            scores[submission.student.id] = {g.name: float(g.score) for g in notebook.grades}
    return scores


def test_the_whole_course_loop(tmp_path: Path) -> None:
    course = tmp_path / "course"
    init_course(course)
    assert (course / "release" / SLUG / f"{SLUG}.ipynb").is_file()

    archive = course / "downloaded" / SLUG / "archive"
    for student, notebook in submissions().items():
        write_notebook(notebook, archive / f"{student}_{SLUG}.ipynb")
    run_nbgrader(course, "zip_collect", SLUG, "--force")
    for student in submissions():
        assert (course / "submitted" / student / SLUG / f"{SLUG}.ipynb").is_file()

    run_nbgrader(course, "autograde", SLUG, "--force", timeout=1200)
    theirs = nbgrader_cell_scores(course)

    out = tmp_path / "out"
    graded = subprocess.run(
        [sys.executable, "-m", "attnkit", "grade", str(course), "--out", str(out), "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert graded.returncode == 0, graded.stderr
    records = {
        r["student"]: r for r in json.loads((out / "grades.json").read_text())["submissions"]
    }
    ours = {s: {t["grade_id"]: t["points"] for t in r["tests"]} for s, r in records.items()}

    for student in ("ada", "ben", "cy", "dee", "eli"):  # honest: one verdict
        assert ours[student] == theirs[student], student
    assert sum(ours["ada"].values()) == sum(ours["ben"].values()) == 13.0  # warnings cost 0
    assert sum(ours["eli"].values()) == 0.0
    # nbgrader is fooled by the patched numpy: the wrong softmax gets its points there ...
    assert theirs["fox"]["test_softmax_values"] == 2.0
    assert theirs["fox"]["test_softmax_stability"] == 1.0
    # ... while attnkit grade gives the wrong code what it earns: softmax and the
    # self_attention that uses it lose their 3 + 5 points.
    assert ours["fox"]["test_softmax_values"] == ours["fox"]["test_softmax_stability"] == 0.0
    assert sum(ours["fox"].values()) == 13.0 - 3.0 - 5.0 < sum(theirs["fox"].values())

    run_nbgrader(course, "generate_feedback", SLUG, "--force")
    for student in submissions():
        assert (course / "feedback" / student / SLUG / f"{SLUG}.html").is_file()
    run_nbgrader(course, "export", "--to", str(tmp_path / "grades.csv"))
    exported = {
        r["student_id"]: float(r["raw_score"])
        for r in csv.DictReader((tmp_path / "grades.csv").open())
        if r["assignment"] == SLUG
    }
    assert exported == {s: r["score"] for s, r in records.items()}
