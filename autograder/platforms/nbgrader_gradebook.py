"""Put ``attnkit grade`` results into an nbgrader course's gradebook, through nbgrader's API.

After this, ``nbgrader export`` and formgrader show the kit's grades as if nbgrader had
autograded the notebooks itself: each graded cell's ``auto_score`` is the points the
kit awarded it. The assignment must exist in the gradebook (``nbgrader
generate_assignment`` creates it); students and submissions are created as needed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from attnkit.errors import KitError
from attnkit.terminal import one_line

from ..classes.spreadsheet import unsafe_unquoted_cell


def find_course(path: Path) -> Path | None:
    """The nbgrader course folder that ``path`` is, or holds ``submitted/`` for."""
    for candidate in (path, path.parent):
        if (candidate / "nbgrader_config.py").is_file() and (candidate / "gradebook.db").is_file():
            return candidate
    return None


def push_grades(course: Path, records: list[dict[str, Any]]) -> list[str]:
    """Write each record's points into the gradebook; returns notes on what was skipped."""
    from nbgrader.api import Gradebook, MissingEntry

    from ..authoring.released import scripts_on_path

    os.environ.update(scripts_on_path())  # nbgrader's Gradebook runs `alembic` by name
    database = course / "gradebook.db"
    if not database.is_file():
        raise KitError(
            f"{course} has no gradebook.db.", "Run `nbgrader generate_assignment` first."
        )
    notes = []
    with Gradebook(f"sqlite:///{database}") as gradebook:
        for record in records:
            slug, student = record["assignment"], record["student"]
            if slug is None:
                continue
            if unsafe := unsafe_unquoted_cell(student):
                # nbgrader's export writes student ids into a CSV as they are, unquoted: an
                # id a name made, that a spreadsheet would run or split, never reaches it.
                notes.append(
                    f"{student!r}: not written to the gradebook: nbgrader's export would "
                    f"write it as it is ({unsafe}); rename the file after the student"
                )
                continue
            if record.get("status") != "graded":
                # An ungraded submission has no points to give: never a 0 in the gradebook,
                # and never over a score another grader (nbgrader autograde) wrote there.
                notes.append(
                    f"{student}/{slug}: not graded ({str(record.get('error'))[:200]}); the "
                    "gradebook keeps what it had"
                )
                continue
            try:
                gradebook.find_assignment(slug)
            except MissingEntry:
                notes.append(f"{slug} is not in the gradebook: run nbgrader generate_assignment")
                continue
            gradebook.update_or_create_student(student)
            try:
                gradebook.find_submission(slug, student)
            except MissingEntry:
                gradebook.add_submission(slug, student)
            for test in record["tests"]:
                try:
                    grade = gradebook.find_grade(test["grade_id"], slug, slug, student)
                except MissingEntry:
                    notes.append(f"{student}/{slug}: no graded cell {test['grade_id']}")
                    continue
                grade.auto_score = float(test["points"])
            if "late" in record:
                # nbgrader's own field for it: `nbgrader export` then shows raw_score,
                # late_submission_penalty and score as the kit's gradebook does.
                notebook = gradebook.find_submission_notebook(slug, slug, student)
                notebook.late_submission_penalty = round(record["raw_score"] - record["score"], 4)
            gradebook.db.commit()
    return notes


def publish(gradebook: str | Path | None, submissions: Path, records: list[dict[str, Any]]) -> None:
    """Write the grades into the nbgrader course's gradebook, where there is one: the
    course given with --gradebook, or the one SUBMISSIONS is (or holds submitted/ for)."""
    course = Path(gradebook) if gradebook is not None else find_course(submissions)
    if course is not None:
        for note in push_grades(course, records):
            print(f"note: {one_line(note)}")
        print(f"grades written to the nbgrader gradebook of {course}")


def course_of(out: Path) -> Path | None:
    """The nbgrader course OUT's class was graded from (class.json's --gradebook, or the
    course SUBMISSIONS is), or None."""
    from ..classes import run_manifest

    manifest = run_manifest.read_if_any(out)
    if manifest is None:
        return None
    if manifest.options.gradebook is not None:
        return Path(manifest.options.gradebook)
    return find_course(Path(manifest.submissions))


def manual_grades(course: Path, records: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """Per (student, assignment) of the graded ``records``: what the instructor changed in
    formgrader, as (points added to the automatic ones, the comments). A cell's manual score
    replaces its automatic one (nbgrader's rule), so a cell's share is manual - automatic."""
    from nbgrader.api import Gradebook, MissingEntry

    from ..authoring.released import scripts_on_path

    os.environ.update(scripts_on_path())
    found: dict[tuple[str, str], Any] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for record in records:
            slug, student = record.get("assignment"), str(record.get("student"))
            if record.get("status") != "graded" or not isinstance(slug, str):
                continue
            try:
                notebook = gradebook.find_submission_notebook(slug, slug, student)
            except MissingEntry:
                continue
            added = sum(
                float(g.manual_score) - float(g.auto_score or 0.0)
                for g in notebook.grades
                if g.manual_score is not None
            )
            comments = [c.manual_comment for c in notebook.comments if c.manual_comment]
            if added or comments:
                found[(student, slug)] = (round(added, 4), comments)
    return found


def with_manual_grades(out: Path, grades: dict[str, Any]) -> dict[str, Any]:
    """``grades`` (OUT's grades.json) with the nbgrader course's manual grades added: each
    row's ``score`` is automatic + manual points, and ``manual`` holds the manual points
    and comments. Unchanged when the class has no course."""
    course = course_of(out)
    if course is None or not (course / "gradebook.db").is_file():
        return grades
    manual = manual_grades(course, grades["submissions"])
    rows = []
    for record in grades["submissions"]:
        change = manual.get((str(record.get("student")), str(record.get("assignment"))))
        if change is not None:
            points, comments = change
            score = max(0.0, float(record["score"]) + points)
            record = {**record, "score": score, "manual": {"points": points, "comments": comments}}
        rows.append(record)
    return {**grades, "submissions": rows}
