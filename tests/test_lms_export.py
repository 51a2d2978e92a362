"""`attnkit export`: the gradebook as Canvas, Moodle and Gradescope import it, matched to the
roster; nothing dropped silently, an ungraded submission never a 0."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from grades_file import gradebook
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.errors import KitError
from attnkit_autograder.classes.results import read_gradebook
from attnkit_autograder.platforms import lms_export

SLUG = "02_self_attention"


def record(student: str, score: float, status: str = "graded", error: str | None = None) -> dict:
    return {
        "student": student, "assignment": SLUG, "status": status, "score": score,
        "max_score": 14.0, "error": error, "source": f"/class/{student}.ipynb", "tests": [],
    }  # fmt: skip


def write_csv(path: Path, rows: list[list[str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)
    return path


COLUMN = "Self-attention in PyTorch (55501)"
CANVAS_ROSTER = [
    ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Quiz 1 (101)", COLUMN],
    ["    Points Possible", "", "", "", "", "10", "14"],
    ["Lovelace, Ada", "11", "S11", "ada", "A", "9", ""],
    ["Babbage, Ben", "12", "S12", "ben", "A", "7", ""],
    ['=HYPERLINK("http://x")', "13", "S13", "dee", "B", "", ""],
]


def attnkit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "attnkit", *args], capture_output=True, text=True, timeout=120
    )


def test_canvas_rows_follow_the_roster_and_an_ungraded_submission_is_blank(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [
        record("ada", 13.0),
        record("BEN", 0.0, "error", "not valid notebook JSON\n(line 1)"),
    ])  # fmt: skip
    roster = write_csv(tmp_path / "canvas.csv", CANVAS_ROSTER)
    done = attnkit("export", str(out), "--format", "canvas", "--roster", str(roster),
                   "--missing", "zero")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "not graded, left blank: BEN (02_self_attention): not valid notebook JSON\\n" in (
        done.stdout
    )
    rows = list(csv.reader((out / "export-canvas.csv").open(newline="")))
    assert rows[0] == [*lms_export.CANVAS_COLUMNS, COLUMN]  # found by the assignment's title
    assert rows[1] == ["Points Possible", "", "", "", "", "14"]
    assert rows[2] == ["Lovelace, Ada", "11", "S11", "ada", "A", "13"]
    assert rows[3] == ["Babbage, Ben", "12", "S12", "ben", "A", ""]  # errored: never a 0
    # No submission: 0, as asked; a name that looks like a formula stays text.
    assert rows[4] == ['\'=HYPERLINK("http://x")', "13", "S13", "dee", "B", "0"]
    done = attnkit("export", str(out), "--format", "canvas", "--roster", str(roster))
    rows = list(csv.reader((out / "export-canvas.csv").open(newline="")))
    assert rows[4][-1] == ""  # the default leaves it blank


def test_a_submission_matching_no_roster_row_or_two_stops_the_export(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [record("ada", 13.0), record("zed", 14.0)])
    roster = write_csv(tmp_path / "canvas.csv", CANVAS_ROSTER)
    done = attnkit("export", str(out), "--format", "canvas", "--roster", str(roster))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "zed (02_self_attention): no roster row match" in done.stderr
    assert not (out / "export-canvas.csv").exists()
    twice = write_csv(tmp_path / "twice.csv", [["Username", "Email"], ["ada", ""], ["x", "ADA"]])
    with pytest.raises(KitError, match="2 roster rows"):
        lms_export.export(
            gradebook(tmp_path / "o2", [record("ada", 1.0)]), "moodle", twice, "blank"
        )


def test_moodle_and_gradescope_match_by_email_whatever_its_case(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [record("ada@uni.edu", 12.5)])
    roster = write_csv(tmp_path / "moodle.csv", [
        ["First name", "Surname", "Email address"],
        ["Ada", "Lovelace", "Ada@Uni.EDU"],
        ["Ben", "Babbage", "ben@uni.edu"],
    ])  # fmt: skip
    lms_export.export(out, "moodle", roster, "blank")
    rows = list(csv.reader((out / "export-moodle.csv").open(newline="")))
    assert rows == [
        ["Email address", "Self-attention in PyTorch"],
        ["Ada@Uni.EDU", "12.5"],
        ["ben@uni.edu", ""],
    ]
    lms_export.export(out, "gradescope-csv", roster, "zero")
    rows = list(csv.reader((out / "export-gradescope-csv.csv").open(newline="")))
    assert rows[0] == ["Name", "SID", "Email", "Self-attention in PyTorch"]
    assert rows[1][2:] == ["Ada@Uni.EDU", "12.5"] and rows[2][2:] == ["ben@uni.edu", "0"]


def test_a_roster_without_an_id_column_is_refused_by_name(tmp_path) -> None:
    roster = write_csv(tmp_path / "r.csv", [["First name", "Surname"], ["Ada", "Lovelace"]])
    with pytest.raises(KitError, match="no id or email column"):
        lms_export.read_roster(roster)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400) | st.text(max_size=300).map(str.encode))
def test_reading_a_roster_is_total(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("roster") / "roster.csv"
    path.write_bytes(b"Username,Email\n" + data if data[:1] == b"x" else data)
    try:
        students = lms_export.read_roster(path)
    except KitError:
        return
    assert students and all(s.keys for s in students)


def test_a_missing_or_damaged_gradebook_is_named_with_its_row(tmp_path) -> None:
    roster = write_csv(tmp_path / "canvas.csv", CANVAS_ROSTER)
    done = attnkit("export", str(tmp_path / "nowhere"), "--format", "moodle", "--roster",
                   str(roster))  # fmt: skip
    assert done.returncode == 1 and "holds no grades.json" in done.stderr
    out = gradebook(tmp_path / "out", [record("ada", 13.0), {**record("ben", 1.0), "score": "9"}])
    with pytest.raises(KitError, match=r"grades.json: submission row 2 is malformed \(score"):
        lms_export.export(out, "canvas", roster, "blank")
    done = attnkit("report", str(out))
    assert done.returncode == 1 and "submission row 2 is malformed" in done.stderr
    assert "Traceback" not in done.stderr


def test_two_submissions_for_one_roster_cell_stop_the_export(tmp_path) -> None:
    roster = write_csv(tmp_path / "r.csv", [["Username", "Email"], ["bob", "b@x"], ["sam", ""]])
    for clash in ([record("bob", 5.0), record("BOB", 0.0, "error", "damaged")],
                  [record("bob", 5.0), record("b@x", 3.0)]):  # fmt: skip
        out = gradebook(tmp_path / f"out{len(clash)}{clash[1]['student']}", clash)
        with pytest.raises(KitError, match="matches it too"):
            lms_export.export(out, "moodle", roster, "blank")
        assert not list(out.glob("export-*"))
    # No folding beyond case: the long s is not an s, and a control character is no space.
    out = gradebook(tmp_path / "fold", [record("ſam", 14.0), record("sam\x1f", 1.0)])
    with pytest.raises(KitError, match="no roster row"):
        lms_export.export(out, "moodle", roster, "blank")


def test_a_file_of_no_known_assignment_is_never_a_zero(tmp_path) -> None:
    roster = write_csv(tmp_path / "r.csv", [["Username", "Email"], ["ann", "a@x"]])
    unknown = {**record("ann", 0.0, "error", "cannot tell which assignment"), "assignment": None}
    out = gradebook(tmp_path / "out", [unknown])
    lms_export.export(out, "moodle", roster, "zero")
    rows = list(csv.reader((out / "export-moodle.csv").open(newline="")))
    assert rows[1] == ["a@x", ""]


def test_identifiers_are_the_rosters_own_and_never_shared(tmp_path) -> None:
    roster = write_csv(tmp_path / "r.csv", [
        ["Full name", "ID number", "Username", "Email"],
        ["Ann", "A123", "0ann", "shared@school"],
        ["Ben", "B456", "0ben", "SHARED@school"],
    ])  # fmt: skip
    out = gradebook(tmp_path / "out", [record("0ann", 14.0), record("0ben", 2.0)])
    lms_export.export(out, "moodle", roster, "blank")
    rows = list(csv.reader((out / "export-moodle.csv").open(newline="")))
    # The emails are shared, so Moodle matches by the first id column, as the roster has it.
    assert rows == [["Username", "Self-attention in PyTorch"], ["0ann", "14"], ["0ben", "2"]]
    lms_export.export(out, "gradescope-csv", roster, "blank")
    rows = list(csv.reader((out / "export-gradescope-csv.csv").open(newline="")))
    assert rows[1][:3] == ["Ann", "0ann", "shared@school"]
    nothing = write_csv(tmp_path / "n.csv", [["Email"], ["x@school"], ["X@school"]])
    out = gradebook(tmp_path / "o2", [])
    with pytest.raises(KitError, match="no roster column names every student once"):
        lms_export.export(out, "moodle", nothing, "blank")


def test_odd_files_are_refused_by_name(tmp_path) -> None:
    import os

    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    with pytest.raises(KitError, match="not a regular file"):
        lms_export.read_roster(fifo)
    out = tmp_path / "deep"
    out.mkdir()
    (out / "grades.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(KitError, match="cannot be read"):
        read_gradebook(out)
    huge = gradebook(tmp_path / "huge", [record("ada", 1.0)])
    document = json.loads((huge / "grades.json").read_text())
    document["assignments"][SLUG]["max_score"] = 10**400
    (huge / "grades.json").write_text(json.dumps(document))
    with pytest.raises(KitError, match="malformed"):
        read_gradebook(huge)


def test_leave_out_takes_only_students_on_no_roster(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [record("ada", 14.0), record("visitor", 9.0)])
    roster = write_csv(tmp_path / "canvas.csv", CANVAS_ROSTER)
    # Ada is on the roster: leaving her out would blank (or zero) a real grade.
    with pytest.raises(KitError, match="on the roster: ada"):
        lms_export.export(out, "canvas", roster, "zero", ("ada",))
    lms_export.export(out, "canvas", roster, "zero", ("visitor",))
    rows = list(csv.reader((out / "export-canvas.csv").open(newline="")))
    assert rows[2][-1] == "14" and len(rows) == 2 + 3


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        (
            ["Student,ID,SIS Login ID", "Lovelace, Ada,11,ada"],
            "line 2 has 4 cells under a header of 3",
        ),
        (["Student,ID,SIS Login ID", "Ada,11,ada", "Ben,,"], "line 3 has no id and no email"),
        (
            ["Student,ID,SIS Login ID", "Ada Lovelace ada,11"],
            "line 2 has 2 cells under a header of 3",
        ),
        (["Student,ID,SIS Login ID", "Ada,11,ada", "Student,ID,SIS Login ID"], "line 3 repeats"),
    ],
)
def test_a_roster_row_that_cannot_be_matched_is_named_by_line(tmp_path, lines, words) -> None:
    """Rows that would shift columns or match no one are refused by line (an Excel-style
    trailing empty cell is not a shift)."""
    roster = tmp_path / "roster.csv"
    roster.write_text("\n".join(lines) + "\n")
    with pytest.raises(KitError, match=words):
        lms_export.read_roster(roster)


def test_a_trailing_empty_cell_is_not_a_shifted_row(tmp_path) -> None:
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS Login ID\nAda,11,ada,\nBen,12,ben\n")
    assert [s.ident[1] for s in lms_export.read_roster(roster)] == ["ada", "ben"]
