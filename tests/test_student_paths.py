"""What a student (or anyone reading the gradebook's exports) sees names the student's own
files relative to the submissions folder, never the grading machine's folders: a class of
40 whose files cannot be graded, each for a reason that names its file, goes through the
grader, the gradebook, the feedback reports, the class report and a Canvas export, and no
output file holds an absolute path of the machine."""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.classes.feedback import write_feedback
from attnkit_autograder.classes.results import deliver, result_path, result_paths, write_gradebook
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings, grade_safely
from attnkit_autograder.grading.records import student_view
from attnkit_autograder.grading.submission import Submission
from attnkit_autograder.platforms import class_report, lms_export

SLUG = "02_self_attention"
COMMENTS_ONLY = {"cells": [{"cell_type": "code", "source": ["# nothing yet\n"], "metadata": {},
                            "outputs": [], "execution_count": None}],
                 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}  # fmt: skip


def odd_file(folder: Path, index: int) -> None:
    """Student ``index``'s file, broken in one of eight ways that each name the file."""
    name = f"s{index:02d}"
    target = folder / f"{name}_{SLUG}.ipynb"
    kind = index % 8
    if kind == 0:
        target.write_text('{"cells": [}')  # not valid JSON
    elif kind == 1:
        target.write_bytes(b'{"cells": "\xff\xfe"}')  # not UTF-8
    elif kind == 2:
        target.symlink_to(folder / f"s{index - 1:02d}_{SLUG}.ipynb")  # a link: never followed
    elif kind == 3:
        target.write_text(json.dumps(COMMENTS_ONLY))  # defines nothing
    elif kind == 4:
        os.mkfifo(target)  # not a regular file
    elif kind == 5:
        target.write_text("[" * 3000 + "]" * 3000)  # nested deeper than any notebook
    elif kind == 6:
        deep = folder / name / "a" / "b" / "c" / "d" / "e"  # nested too deep in the folder
        deep.mkdir(parents=True)
        (deep / f"{SLUG}.ipynb").write_text(json.dumps(COMMENTS_ONLY))
    else:
        target.write_text("")  # empty


def test_no_output_of_a_class_of_40_names_a_folder_of_the_grading_machine(tmp_path) -> None:
    home = tmp_path / "home" / "instructor"
    folder = home / "submissions"
    folder.mkdir(parents=True)
    for index in range(40):
        odd_file(folder, index)
    found = discover(folder)
    assert len(found) == 40 and all(s.root == str(folder) for s in found)
    out = home / "grades"
    settings = GradeSettings(GradeOptions(no_sandbox=True))
    for submission in found:
        record = grade_safely(submission, settings)
        assert record["status"] == "error", record
        assert deliver(record, result_path(out, submission))[0] == "done"
    write_gradebook(out, result_paths(out))
    write_feedback(out)
    (out / "report.html").write_text(class_report.render(out, review_similarity=False))
    roster = out.parent / "roster.csv"
    with open(roster, "w", newline="") as handle:
        csv.writer(handle).writerows([["SIS Login ID"], *([s.student] for s in found)])
    lms_export.export(out, "canvas", roster, "blank")
    shown = [p for p in out.rglob("*") if p.is_file() and p.suffix in (".html", ".txt", ".csv")]
    assert len([p for p in shown if "feedback" in p.parts]) == 80  # HTML and text, each
    machine = {str(tmp_path), str(home), sys.prefix, str(Path(__file__).resolve().parents[1])}
    for path in shown:
        text = path.read_text(encoding="utf-8")
        for folder_name in machine:
            assert folder_name not in text, (path, folder_name)
    errors = [r["error"] for r in json.loads((out / "grades.json").read_text())["submissions"]]
    # Each error still names the student's file, relative to the submissions folder.
    assert any(e.startswith(f"s08_{SLUG}.ipynb: is not valid notebook JSON") for e in errors)
    assert any(e.startswith(f"s02_{SLUG}.ipynb is a symbolic link") for e in errors)
    assert any(e.startswith(f"s06{os.sep}a{os.sep}b") for e in errors), errors


def test_the_student_view_replaces_whole_folders_only(tmp_path) -> None:
    submission = Submission("hal", SLUG, tmp_path / "class" / "hal.ipynb", root="/srv/class")
    assert student_view("/srv/class/hal.ipynb: bad", submission) == "hal.ipynb: bad"
    assert student_view("in /srv/class", submission) == "in ."
    assert student_view(f"{sys.prefix}/lib/torch.py", submission) == "<python>/lib/torch.py"
    assert student_view("/srv/classic/x and /srv/class.", submission) == "/srv/classic/x and .."
