"""`attnkit demo`: a made-up class graded by the real grader, with nothing on stderr."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit.errors import KitError
from attnkit_autograder.classes.results import storage_name
from attnkit_autograder.platforms.demo import CLASS, MARKER, SLUG, prepare_out


@pytest.mark.slow
def test_demo_grades_its_class_and_says_where_to_look(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "attnkit", "demo", "--out", str(out), "--jobs", "2"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # A quiet terminal: the progress bar is off without a tty, and the warnings that
    # replaying catalogued mistakes raises (overflow, deprecations) never get through.
    assert "Warning" not in done.stderr, done.stderr
    assert "graded cell" in done.stdout and f"{len(CLASS)} submissions" in done.stdout
    assert f"Look in {out}/" in done.stdout

    grades = json.loads((out / "grades.json").read_text())
    records = {r["student"]: r for r in grades["submissions"]}
    assert set(records) == {s.name for s in CLASS}
    full = grades["assignments"][SLUG]["max_score"]
    for student in ("ada", "ben"):
        assert records[student]["score"] == full, records[student]
    for student in CLASS:
        record = records[student.name]
        if student.mistake:
            exercise, mistake_id = student.mistake.split("/")[1:]
            failed = [t for t in record["tests"] if t["status"] != "passed"]
            assert record["score"] < full
            assert {t["exercise"] for t in failed} >= {exercise}
            diagnosed = {t["diagnosis"]["id"] for t in failed if t["exercise"] == exercise}
            assert diagnosed == {mistake_id}, failed
    hostile = records["gus"]
    assert {t["exercise"] for t in hostile["tests"] if t["status"] != "passed"} == {
        "SelfAttention_v2"
    }
    assert records["hal"]["status"] == "error" and records["hal"]["error"]

    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert sorted(r["student"] for r in rows) == sorted(records)
    for student in CLASS:
        if not student.damaged:
            report = out / "feedback" / storage_name(student.name) / f"{SLUG}.html"
            assert "<html" in report.read_text()[:200].lower(), report


def test_demo_replaces_its_own_folder_but_no_other(tmp_path: Path) -> None:
    mine = tmp_path / "old-demo"
    prepare_out(mine)
    (mine / "grades.json").write_text("{}")
    prepare_out(mine)
    assert sorted(p.name for p in mine.iterdir()) == [MARKER]

    theirs = tmp_path / "thesis"
    theirs.mkdir()
    (theirs / "chapter1.tex").write_text("precious")
    with pytest.raises(KitError, match="was not made by `attnkit demo`"):
        prepare_out(theirs)
    assert (theirs / "chapter1.tex").read_text() == "precious"
