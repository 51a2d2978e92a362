"""`attnkit export` into the platform's own column: Canvas's, Moodle's and Gradescope's
gradebook exports as rosters, the column found or asked for, points possible checked; and
rosters as spreadsheets save them (semicolons, tabs, byte-order marks, quoted headers)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from grades_file import gradebook

from attnkit.errors import KitError
from attnkit_autograder.platforms import lms_export
from attnkit_autograder.platforms.roster import read_table

SLUG = "02_self_attention"
LAB2 = "Lab 2: self-attention (55501)"


def record(student: str, score: float, status: str = "graded") -> dict:
    return {
        "student": student, "assignment": SLUG, "status": status, "score": score,
        "max_score": 14.0, "error": None if status == "graded" else "damaged",
        "source": f"{student}.ipynb", "tests": [],
    }  # fmt: skip


def write_csv(path: Path, rows: list[list[str]], **options) -> Path:
    with open(path, "w", newline="", encoding=options.pop("encoding", "utf-8")) as handle:
        csv.writer(handle, **options).writerows(rows)
    return path


def canvas_gradebook(points: str = "14") -> list[list[str]]:
    """A Canvas gradebook export as Canvas writes it: the read-only calculated columns, the
    points row, a test student, and the assignment's own column."""
    calculated = ["Assignments Current Score", "Current Score", "Unposted Current Score",
                  "Final Score", "Current Grade", "Final Grade"]  # fmt: skip
    return [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Lab 1: numpy (55500)",
         LAB2, *calculated],
        ["    Points Possible", "", "", "", "", "13", points, *["(read only)"] * 6],
        ["Lovelace, Ada", "11", "S11", "ada", "A", "12", "", "92", "92", "92", "92", "A", "A"],
        ["Babbage, Ben", "12", "S12", "ben", "A", "13", "3", "100", "50", "50", "50", "A", "F"],
        ["Hopper, Grace", "14", "S14", "grace", "B", "", "", "", "", "", "", "", ""],
        ["Student, Test", "99", "", "", "A", "", "", "", "", "", "", "", ""],
    ]  # fmt: skip


def exported(out: Path, kind: str) -> list[list[str]]:
    return list(csv.reader((out / f"export-{kind}.csv").open(newline="", encoding="utf-8")))


@pytest.mark.parametrize("column", [LAB2, "55501", "lab 2: SELF-ATTENTION"])
def test_canvas_export_updates_the_named_column_and_only_it(tmp_path, column) -> None:
    out = gradebook(tmp_path / "out", [record("ada", 13.0), record("ben", 0.0, "error")])
    roster = write_csv(tmp_path / "canvas.csv", canvas_gradebook())
    lms_export.export(out, "canvas", roster, "zero", columns=(column,))
    assert exported(out, "canvas") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", LAB2],
        ["Points Possible", "", "", "", "", "14"],
        ["Lovelace, Ada", "11", "S11", "ada", "A", "13"],
        ["Babbage, Ben", "12", "S12", "ben", "A", ""],  # could not be graded: blank
        ["Hopper, Grace", "14", "S14", "grace", "B", "0"],  # nothing handed in: --missing
        ["Student, Test", "99", "", "", "A", ""],  # Canvas's test student: never a 0
    ]


def test_without_column_the_kit_asks_which_and_writes_nothing(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [record("ada", 13.0)])
    roster = write_csv(tmp_path / "canvas.csv", canvas_gradebook())
    with pytest.raises(KitError) as refused:
        lms_export.export(out, "canvas", roster, "blank")
    message = str(refused.value) + refused.value.hint
    assert "'Lab 1: numpy (55500)', 'Lab 2: self-attention (55501)'" in message
    assert "Current Score" not in message and "--column" in message
    assert not (out / "export-canvas.csv").exists()


def test_points_possible_must_be_the_kits_maximum(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [record("ada", 13.0)])
    roster = write_csv(tmp_path / "canvas.csv", canvas_gradebook(points="10"))
    with pytest.raises(KitError, match=r"worth 10 points.*out of 14"):
        lms_export.export(out, "canvas", roster, "blank", columns=("55501",))
    with pytest.raises(KitError, match="not an assignment"):
        lms_export.export(out, "canvas", roster, "blank", columns=("Final Score",))
    with pytest.raises(KitError, match="names no column"):
        lms_export.export(out, "canvas", roster, "blank", columns=("Lab 9",))
    assert not (out / "export-canvas.csv").exists()


def test_moodle_grades_export_as_roster_finds_the_grade_item(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [record("ada@uni.edu", 12.5)])
    roster = write_csv(tmp_path / "moodle.csv", [
        ["First name", "Last name", "ID number", "Institution", "Department", "Email address",
         "Assignment: Lab 1 (Real)", "Assignment: Lab 2 (Real)", "Course total (Real)",
         "Last downloaded from this course"],
        ["Ada", "Lovelace", "", "", "", "ada@uni.edu", "12.00", "-", "12.00", "1700000000"],
        ["Ben", "Babbage", "", "", "", "ben@uni.edu", "-", "-", "-", "1700000000"],
    ])  # fmt: skip
    with pytest.raises(KitError, match="'Assignment: Lab 1 \\(Real\\)', 'Assignment: Lab 2"):
        lms_export.export(out, "moodle", roster, "blank")
    lms_export.export(out, "moodle", roster, "blank", columns=("Lab 2",))
    assert exported(out, "moodle") == [
        ["Email address", "Assignment: Lab 2 (Real)"],
        ["ada@uni.edu", "12.5"],
        ["ben@uni.edu", ""],
    ]


def test_gradescope_grades_export_as_roster_checks_max_points(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [record("s1", 14.0)])
    rows = [
        ["First Name", "Last Name", "SID", "Email", "Sections", "Lab 2", "Lab 2 - Max Points",
         "Lab 2 - Submission Time", "Lab 2 - Lateness (H:M:S)", "Total Lateness (H:M:S)"],
        ["Ada", "Lovelace", "s1", "ada@uni.edu", "", "", "14.0", "", "", "0:00:00"],
        ["Ben", "Babbage", "s2", "ben@uni.edu", "", "", "14.0", "", "", "0:00:00"],
    ]  # fmt: skip
    roster = write_csv(tmp_path / "gs.csv", rows)
    with pytest.raises(KitError, match=r"assignment columns \('Lab 2'\)"):
        lms_export.export(out, "gradescope-csv", roster, "blank")
    lms_export.export(out, "gradescope-csv", roster, "blank", columns=("lab 2",))
    assert exported(out, "gradescope-csv")[:2] == [
        ["Name", "SID", "Email", "Lab 2"],
        ["Ada Lovelace", "s1", "ada@uni.edu", "14"],
    ]
    ten = [rows[0], *([*r[:6], "10.0", *r[7:]] for r in rows[1:])]
    wrong = write_csv(tmp_path / "gs10.csv", ten)
    with pytest.raises(KitError, match="worth 10 points"):
        lms_export.export(out, "gradescope-csv", wrong, "blank", columns=("Lab 2",))


def test_a_column_for_one_of_several_assignments_names_it(tmp_path) -> None:
    out = gradebook(tmp_path / "out", [record("ada", 13.0)])
    document = json.loads((out / "grades.json").read_text())
    document["assignments"]["01_numpy_attention"] = {"title": "NumPy", "max_score": 13.0}
    (out / "grades.json").write_text(json.dumps(document))
    roster = write_csv(tmp_path / "canvas.csv", canvas_gradebook())
    with pytest.raises(KitError, match="say whose column it is"):
        lms_export.export(out, "canvas", roster, "blank", columns=("55501",))
    lms_export.export(out, "canvas", roster, "blank", columns=("2=55501", "1=55500"))
    head = exported(out, "canvas")[0]
    assert head[5:] == ["Lab 1: numpy (55500)", LAB2]


# -- rosters as spreadsheets save them ---------------------------------------------------------


def saved_ways(tmp_path: Path, rows: list[list[str]]) -> dict[str, Path]:
    ways = {
        "comma": write_csv(tmp_path / "comma.csv", rows),
        "semicolon": write_csv(tmp_path / "semi.csv", rows, delimiter=";"),
        "tab": write_csv(tmp_path / "tab.tsv", rows, delimiter="\t"),
        "utf-8 bom": write_csv(tmp_path / "bom.csv", rows, encoding="utf-8-sig", delimiter=";"),
        "utf-16": write_csv(tmp_path / "u16.txt", rows, encoding="utf-16", delimiter="\t"),
        "quoted": write_csv(tmp_path / "q.csv", rows, delimiter=";", quoting=csv.QUOTE_ALL),
    }
    excel = tmp_path / "excel.csv"
    excel.write_text("sep=;\n" + (tmp_path / "semi.csv").read_text())
    ways["sep= line"] = excel
    return ways


def test_semicolons_tabs_boms_and_quoted_headers_read_alike(tmp_path) -> None:
    rows = canvas_gradebook()
    out = gradebook(tmp_path / "out", [record("ada", 13.0)])
    plain = write_csv(tmp_path / "plain.csv", rows)
    lms_export.export(out, "canvas", plain, "blank", columns=("55501",))
    expected = (out / "export-canvas.csv").read_bytes()
    for way, path in saved_ways(tmp_path, rows).items():
        table = read_table(path)
        assert table.header == rows[0], way
        assert [s.name for s in table.students][:2] == ["Lovelace, Ada", "Babbage, Ben"], way
        (out / "export-canvas.csv").unlink()
        lms_export.export(out, "canvas", path, "blank", columns=("55501",))
        assert (out / "export-canvas.csv").read_bytes() == expected, way


def test_refusals_say_what_was_expected(tmp_path) -> None:
    piped = tmp_path / "piped.csv"
    piped.write_text("Student|SIS Login ID\nAda|ada\n")
    with pytest.raises(KitError) as refused:
        read_table(piped)
    assert "expected a column named SIS Login ID" in str(refused.value)
    assert "semicolons or tabs" in refused.value.hint
    out = gradebook(tmp_path / "out", [record("ada", 13.0), record("visitor", 9.0)])
    roster = write_csv(tmp_path / "r.csv", [["Username"], ["ada"]], delimiter=";")
    with pytest.raises(KitError) as refused:
        lms_export.export(out, "moodle", roster, "blank")
    assert "visitor (02_self_attention): no roster row" in str(refused.value)
    assert "--leave-out STUDENT" in refused.value.hint
