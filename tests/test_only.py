"""`attnkit grade --only ID` grades one student of a class again: their row is replaced,
every other row of grades.json and grades.csv stays byte for byte, nobody else is graded;
and results and feedback that no longer belong to any submission are removed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fake_grading

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"


def make_class(folder: Path, count: int) -> Path:
    return fake_grading.make_class(folder, count, SLUG)


def fake_grade(subs: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / "tests" / "fake_grading.py"), str(subs), str(out)]
    return subprocess.run([*command, *extra], capture_output=True, text=True, timeout=300)


def rows(out: Path) -> dict[str, dict]:
    return {r["student"]: r for r in json.loads((out / "grades.json").read_text())["submissions"]}


def csv_lines(out: Path) -> dict[str, bytes]:
    lines = (out / "grades.csv").read_bytes().splitlines(keepends=True)
    return {line.split(b",")[0].strip(b'"').decode(): line for line in lines[1:]}


def result_times(out: Path) -> dict[str, int]:
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in out.glob("results/*/*.json")}


def test_only_one_of_40_is_graded_again_and_the_other_39_rows_are_untouched(tmp_path) -> None:
    subs = make_class(tmp_path / "subs", 40)
    out = tmp_path / "out"
    first = fake_grade(subs, out, "--delay", "0")
    assert first.returncode == 0
    # stderr is a pipe here, not a terminal: progress comes as lines a log can keep.
    assert "grading 40 submission(s)\n" in first.stderr
    assert "graded 40 of 40 submission(s) in 0:0" in first.stderr
    before_rows, before_csv, before_times = rows(out), csv_lines(out), result_times(out)
    (subs / f"student07_{SLUG}.py").write_text("def softmax(x):\n    return 'fixed'\n")
    (subs / f"student08_{SLUG}.py").write_text("def softmax(x):\n    return 'changed too'\n")
    done = fake_grade(subs, out, "--delay", "0", "--only", "student07")
    assert done.returncode == 1, done.stderr  # student08 changed and was not graded: INCOMPLETE
    assert "grading only 1 submission(s) of 40" in done.stdout
    after_rows, after_csv, after_times = rows(out), csv_lines(out), result_times(out)
    assert after_rows["student07"]["source_sha256"] != before_rows["student07"]["source_sha256"]
    assert after_rows["student08"]["status"] == "incomplete"
    others = [f"student{i:02d}" for i in range(40) if i not in (7, 8)]
    assert len(others) == 38
    for student in others:
        assert after_rows[student] == before_rows[student], student
        assert after_csv[student] == before_csv[student], student
    changed = {k for k in after_times if after_times[k] != before_times.get(k)}
    assert len(changed) == 1 and "student07" in changed.pop()  # nobody else was graded


def test_only_refuses_an_id_of_no_student(tmp_path) -> None:
    subs = make_class(tmp_path / "subs", 3)
    out = tmp_path / "out"
    assert fake_grade(subs, out, "--delay", "0").returncode == 0
    before = (out / "grades.json").read_bytes()
    done = fake_grade(subs, out, "--only", "Student01")
    assert done.returncode == 1 and "--only names no student of the class: Student01" in (
        done.stderr + done.stdout
    )
    assert (out / "grades.json").read_bytes() == before


def test_a_renamed_file_leaves_no_result_or_report_behind(tmp_path) -> None:
    subs = make_class(tmp_path / "subs", 3)
    out = tmp_path / "out"
    assert fake_grade(subs, out, "--delay", "0", "--feedback").returncode == 0
    old_reports = sorted(p.parent.name for p in out.glob("feedback/student01-*/*.html"))
    assert len(old_reports) == 1
    (subs / f"student01_{SLUG}.py").rename(subs / f"student01b_{SLUG}.py")
    done = fake_grade(subs, out, "--delay", "0", "--feedback", "--only", "student01b")
    assert done.returncode == 0, done.stderr
    assert "removed 3 result file(s) and report(s)" in done.stdout
    assert not list(out.glob("results/student01-*")) and not list(out.glob("feedback/student01-*"))
    assert len(list(out.glob("feedback/student01b-*/*.html"))) == 1
    assert sorted(rows(out)) == ["student00", "student01b", "student02"]


def test_regrade_only_grades_one_student_and_takes_the_others_from_out(tmp_path) -> None:
    subs = make_class(tmp_path / "subs", 10)
    out = tmp_path / "out"
    assert fake_grade(subs, out, "--delay", "0").returncode == 0
    before_rows, before_csv = rows(out), csv_lines(out)
    (subs / f"student03_{SLUG}.py").write_text("def softmax(x):\n    return 'again'\n")
    command = [sys.executable, str(ROOT / "tests" / "fake_grading.py"), "regrade", str(out)]
    done = subprocess.run([*command, "--only", "student03"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "grading only 1 submission(s) of 10" in done.stdout
    regraded = out / "regrade"
    for path in out.glob("results/*/*.json"):
        copy = regraded / path.relative_to(out)
        same = copy.read_bytes() == path.read_bytes()
        assert same == ("student03" not in path.parent.name), path
    after = rows(regraded)
    assert after["student03"]["source_sha256"] != before_rows["student03"]["source_sha256"]
    assert {k: v for k, v in after.items() if k != "student03"} == {
        k: v for k, v in before_rows.items() if k != "student03"
    }
    lines = csv_lines(regraded)
    assert all(lines[k] == before_csv[k] for k in before_csv if k != "student03")


def test_progress_lines_come_every_thirty_seconds_and_at_the_end(capsys, monkeypatch) -> None:
    from attnkit_autograder.classes import grade

    clock = iter([0.0, 10.0, 31.0, 40.0, 75.0, 76.0])
    monkeypatch.setattr(grade.time, "monotonic", lambda: next(clock))
    progress = grade.ProgressLines(5)
    for _ in range(5):
        progress.update()
    assert capsys.readouterr().err.splitlines() == [
        "grading 5 submission(s)",
        "graded 2 of 5 submission(s) in 0:31",
        "graded 4 of 5 submission(s) in 1:15",
        "graded 5 of 5 submission(s) in 1:16",
    ]
