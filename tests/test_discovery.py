"""Discovery, student ids and the gradebook files: whatever the submissions folder holds."""

from __future__ import annotations

import csv
import errno
import json
import os
import time
from pathlib import Path

import pytest

from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.classes import results
from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.classes.results import (
    result_path,
    result_paths,
    write_atomic,
    write_gradebook,
)
from attnkit_autograder.grading import pipeline
from attnkit_autograder.grading.records import error_record
from attnkit_autograder.grading.submission import (
    MAX_SUBMISSION_BYTES,
    Refused,
    Submission,
    read_submission_file,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = released_path("02_self_attention", ROOT / "assignments")
SLUG = "02_self_attention"


def by_student(root: Path, forced: str | None = None) -> dict[str, Submission]:
    found = discover(root, forced)
    assert len({s.student for s in found}) == len(found)
    return {s.student: s for s in found}


# --- one file never stops the class ----------------------------------------------------------


def test_a_broken_file_is_its_own_error_and_the_class_is_found(tmp_path: Path) -> None:
    (tmp_path / f"ann_{SLUG}.ipynb").write_bytes(NOTEBOOK.read_bytes())
    (tmp_path / "meta.ipynb").write_text('{"metadata": {"assignment": [], "attnkit": []}}')
    (tmp_path / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "latin.ipynb").write_bytes(b'{"a": "caf\xe9"}')
    (tmp_path / "half.ipynb").write_text('{"cells": [')
    found = by_student(tmp_path)
    assert found["ann"].problem is None and found["ann"].assignment == SLUG
    assert "which assignment" in found["meta"].problem
    assert "nests JSON deeper" in found["deep"].problem
    assert "not UTF-8" in found["latin"].problem
    assert "not valid notebook JSON" in found["half"].problem


def test_deep_json_is_refused_even_when_the_name_gives_the_assignment(tmp_path: Path) -> None:
    (tmp_path / f"deep_{SLUG}.ipynb").write_text('{"a": ' + "[" * 50_000 + "]" * 50_000 + "}")
    deep = by_student(tmp_path)["deep"]
    assert deep.assignment == SLUG and "nests JSON deeper" in deep.problem


def test_nested_folders_are_found_and_too_deep_ones_listed(tmp_path: Path) -> None:
    (tmp_path / "bo" / "work" / "final").mkdir(parents=True)
    (tmp_path / "bo" / "work" / "final" / "nb.ipynb").write_bytes(NOTEBOOK.read_bytes())
    deep = tmp_path / "cy" / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    (deep / f"{SLUG}.ipynb").write_bytes(NOTEBOOK.read_bytes())
    (tmp_path / "di").mkdir()
    (tmp_path / "di" / "readme.txt").write_text("no notebook here")
    found = by_student(tmp_path)
    assert found["bo"].assignment == SLUG and found["bo"].problem is None
    assert found["bo"].path.name == "nb.ipynb"
    assert "nested more than 4 folders deep" in found["cy"].problem
    assert "holds no notebook" in found["di"].problem


def test_links_devices_and_huge_files_are_refused_unopened(tmp_path: Path) -> None:
    secret = tmp_path / "references.py"
    secret.write_text("def softmax(x): ...")
    classroom = tmp_path / "class"
    (classroom / "eve").mkdir(parents=True)
    (classroom / f"ann_{SLUG}.py").symlink_to(secret)
    (classroom / "eve" / f"{SLUG}.py").symlink_to(secret)
    (classroom / "fred").symlink_to(tmp_path)  # a folder link: never entered
    os.mkfifo(classroom / f"gil_{SLUG}.ipynb")  # opening it would block forever
    with open(classroom / f"hal_{SLUG}.ipynb", "wb") as huge:
        huge.truncate(MAX_SUBMISSION_BYTES + 1)  # sparse: costs no disk
    started = time.monotonic()
    found = by_student(classroom)
    assert time.monotonic() - started < 5
    for student in ("ann", "eve", "fred"):
        assert "symbolic link" in found[student].problem, student
        assert found[student].sha256 == ""
    assert "not a regular file" in found["gil"].problem
    assert "over the 32 MiB limit" in found["hal"].problem
    with pytest.raises(Refused, match="symbolic link"):
        read_submission_file(classroom / f"ann_{SLUG}.py")
    # The record of a refused link holds nothing read through it.
    record = error_record(found["ann"], found["ann"].problem)
    assert record["source_sha256"] == "" and record["status"] == "error"


# --- student ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "student",
    ["..", ".", "/", "../../etc", "a/../../b", "x\x00y", "é" * 300, "-" * 5000, "\n", "", "~"],
)
def test_no_student_id_puts_a_file_outside_out(tmp_path: Path, student: str) -> None:
    out = tmp_path / "out"
    path = result_path(out, Submission(student, SLUG, tmp_path / "x.py"))
    assert path.resolve().is_relative_to((out / "results").resolve())
    assert len(path.relative_to(out / "results").parts) == 2
    assert all(len(part.encode()) < 255 for part in path.parts)


def test_ids_that_read_alike_never_share_a_result_file(tmp_path: Path) -> None:
    names = ["li wei", "li_wei", "li/wei", "li-wei", "Li Wei", "li wei "]
    paths = {result_path(tmp_path, Submission(n, SLUG, tmp_path / "x.py")) for n in names}
    assert len(paths) == len(names)
    # ... and the same id always maps to the same file (a rerun finds its results).
    assert result_path(tmp_path, Submission("li wei", SLUG, Path("a"))) == result_path(
        tmp_path, Submission("li wei", SLUG, Path("b"))
    )


def test_dot_names_become_plain_ids(tmp_path: Path) -> None:
    (tmp_path / "...ipynb").write_bytes(NOTEBOOK.read_bytes())
    (tmp_path / "li wei").mkdir()
    (tmp_path / "li wei" / f"{SLUG}.ipynb").write_bytes(NOTEBOOK.read_bytes())
    (tmp_path / f"li_wei_{SLUG}.ipynb").write_bytes(NOTEBOOK.read_bytes())
    found = by_student(tmp_path)
    assert set(found) == {"..", "li wei", "li_wei"}
    out = tmp_path / "out"
    targets = {result_path(out, s) for s in found.values()}
    assert len(targets) == 3 and all(t.is_relative_to(out / "results") for t in targets)


def test_lms_file_names_map_to_documented_ids(tmp_path: Path) -> None:
    nb = NOTEBOOK.read_bytes()
    (tmp_path / f"smithjane_12345_67890_{SLUG}.ipynb").write_bytes(nb)
    (tmp_path / f"doejohn_LATE_23456_78901_{SLUG}.ipynb").write_bytes(nb)
    (tmp_path / f"leekim_111_1_{SLUG}.ipynb").write_bytes(nb)  # two Canvas students,
    (tmp_path / f"leekim_222_2_{SLUG}.ipynb").write_bytes(nb)  # one name
    (tmp_path / "Ada Lovelace_4242_assignsubmission_file_").mkdir()
    (tmp_path / "Ada Lovelace_4242_assignsubmission_file_" / "my work.ipynb").write_bytes(nb)
    for when in ("2024-03-01-10-00-00", "2024-03-02-09-30-00"):
        (tmp_path / f"Attention_bbuser_attempt_{when}_{SLUG}.ipynb").write_bytes(nb)
    (tmp_path / "Attention_bbuser_attempt_2024-03-01-10-00-00.txt").write_text("receipt")
    (tmp_path / f"s04-np-colab-copy_Copy of {SLUG}.ipynb").write_bytes(nb)
    found = by_student(tmp_path)
    assert set(found) == {
        "smithjane",
        "doejohn",
        "leekim_111",
        "leekim_222",
        "Ada Lovelace",
        "bbuser",
        "s04-np-colab-copy_Copy of",
    }
    assert found["smithjane"].id_rule == "canvas" and found["smithjane"].problem is None
    assert found["doejohn"].notes == ("Canvas marked this submission LATE",)
    assert found["Ada Lovelace"].id_rule == "moodle" and found["Ada Lovelace"].assignment == SLUG
    assert found["bbuser"].path.name.startswith("Attention_bbuser_attempt_2024-03-02")
    assert "latest of 2 attempts" in found["bbuser"].notes[0]
    renamed = found["s04-np-colab-copy_Copy of"]
    assert "renamed copy" in renamed.problem and renamed.path.name.startswith("s04-np")


def test_a_name_that_reads_like_anothers_id_never_takes_their_submission(
    tmp_path: Path,
) -> None:
    """Moodle numbers two Ada Lovelaces 4242 and 5555; a third student names themself
    "Ada Lovelace_4242" (number 7777). Ids come from the platform's numbers: three students,
    each graded on their own file, none merged with another."""
    nb = NOTEBOOK.read_bytes()
    files = {
        "Ada Lovelace_4242_assignsubmission_file_/my work.ipynb": nb,
        "Ada Lovelace_5555_assignsubmission_file_/attention.ipynb": nb,
        f"Ada Lovelace_4242_7777_assignsubmission_file_/{SLUG}.ipynb": nb,
    }
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True)
        (tmp_path / name).write_bytes(data)
    found = by_student(tmp_path)
    assert len(found) == 3
    chosen = {s.path.relative_to(tmp_path).as_posix(): s.student for s in found.values()}
    assert set(chosen) == set(files)
    assert all(s.problem is None for s in found.values())
    ids = [chosen[name] for name in files]
    assert ids[0] != ids[2] and "7777" in ids[2] and "7777" not in ids[0]


def test_a_file_of_countless_empty_lists_is_refused_before_parsing(tmp_path: Path) -> None:
    from attnkit_autograder.grading.submission import MAX_CONTAINERS

    path = tmp_path / f"eve_{SLUG}.ipynb"
    path.write_bytes(b'{"cells": [' + b"[]," * MAX_CONTAINERS + b"[]]}")
    with pytest.raises(Refused, match="lists and objects"):
        read_submission_file(path)
    assert read_submission_file(NOTEBOOK) == NOTEBOOK.read_bytes()


def test_nbgrader_zip_collect_layout(tmp_path: Path) -> None:
    submitted = tmp_path / "course" / "submitted"
    for student in ("ann", "ben"):
        folder = submitted / student / SLUG
        folder.mkdir(parents=True)
        (folder / f"{SLUG}.ipynb").write_bytes(NOTEBOOK.read_bytes())
    (submitted / "ben" / "01_numpy_attention").mkdir()
    found = discover(tmp_path / "course", SLUG)
    assert [(s.student, s.assignment, s.problem) for s in found] == [
        ("ann", SLUG, None),
        ("ben", SLUG, None),
    ]


def test_nbgrader_student_folders_are_nbgraders_ids_whatever_they_look_like(tmp_path) -> None:
    """nbgrader's folder names the student nbgrader collected: a participant whose name
    reads like a Moodle folder (``bob_1_2_x``) or a Canvas LATE upload is not renamed to
    the student that convention would give, nor judged late by it."""
    from attnkit_autograder.classes.hand_in import hand_in_of

    submitted = tmp_path / "course" / "submitted"
    names = ("bob", "bob_1_2_x", "Ada Lovelace_4242_assignsubmission_file_", "eve_LATE_7_8_x")
    for student in names:
        folder = submitted / student / SLUG
        folder.mkdir(parents=True)
        (folder / f"{SLUG}.ipynb").write_bytes(NOTEBOOK.read_bytes())
        (folder / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    found = discover(tmp_path / "course", SLUG)
    assert sorted(s.student for s in found) == sorted(names)
    assert {s.id_rule for s in found} == {"nbgrader"}
    for submission in found:
        record = hand_in_of(submission, submitted)
        assert not record.late_mark and record.source == "nbgrader timestamp.txt"


# --- the gradebook files ------------------------------------------------------------------------


def fake_results(out: Path, students: list[str]) -> list[Submission]:
    submissions = [
        Submission(s, SLUG, out / f"{i}.py", None, f"{i:064d}") for i, s in enumerate(students)
    ]
    for submission in submissions:
        record = error_record(submission, f"-{submission.student} broke")
        write_atomic(result_path(out, submission), json.dumps(record))
    return submissions


def test_csv_neutralises_formulas(tmp_path: Path) -> None:
    hostile = ["=2+5+cmd|' -C calc'!A0", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "plain"]
    write_gradebook(tmp_path, result_paths(tmp_path, fake_results(tmp_path, hostile)))
    rows = list(csv.DictReader((tmp_path / "grades.csv").open(newline="")))
    students = {row["student"] for row in rows}
    assert students == {"'" + h for h in hostile[:-1]} | {"plain"}
    assert all(row["error"].startswith("'-") for row in rows)
    assert b"\"'=2+5+cmd|' -C calc'!A0\"" in (tmp_path / "grades.csv").read_bytes()


def test_a_full_disk_leaves_both_gradebook_files_as_they_were(tmp_path: Path, monkeypatch) -> None:
    submissions = fake_results(tmp_path, ["ann", "ben"])
    write_gradebook(tmp_path, result_paths(tmp_path, submissions[:1]))
    before = {n: (tmp_path / n).read_bytes() for n in ("grades.json", "grades.csv")}
    real_stage, calls = results.stage, []

    def stage(path: Path, text: str) -> str:
        calls.append(path.name)
        if path.name == "grades.csv":  # grades.json was staged already: it must not land
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_stage(path, text)

    monkeypatch.setattr(results, "stage", stage)
    with pytest.raises(OSError) as raised:
        write_gradebook(tmp_path, result_paths(tmp_path, submissions))
    assert calls == ["grades.json", "grades.csv"]
    assert {n: (tmp_path / n).read_bytes() for n in before} == before
    assert not list(tmp_path.glob(".grades*.tmp"))
    advice = results.disk_advice(tmp_path / "grades.json", raised.value)
    assert "is full" in advice and "run the same command again" in advice


# --- the grader's own failures ---------------------------------------------------------------


def test_grader_failures_are_retried_once_then_blamed_on_the_grader(tmp_path, monkeypatch) -> None:
    submission = Submission("ann", SLUG, tmp_path / "ann.py", None, "0" * 64)
    failures = iter([RuntimeError("flaky"), None])

    def once(sub, settings):
        failure = next(failures)
        if failure:
            raise failure
        return {**error_record(sub, "fine"), "status": "graded", "error": None}

    monkeypatch.setattr(pipeline, "grade_submission", once)
    assert pipeline.grade_safely(submission, pipeline.GradeSettings())["status"] == "graded"

    def always(sub, settings):
        raise RuntimeError("broken grader")

    monkeypatch.setattr(pipeline, "grade_submission", always)
    record = pipeline.grade_safely(submission, pipeline.GradeSettings())
    assert record["status"] == "error" and record["fault"] == "grader"
    assert "failed twice" in record["error"] and "not of the submission" in record["error"]
    write_atomic(result_path(tmp_path, submission), json.dumps(record))
    assert results.missing([submission], tmp_path) == [submission]  # a rerun retries it
    assert "fault" not in results.collect(results.result_paths(tmp_path, [submission]))[0]


def test_a_lone_upload_keeps_its_name_whatever_it_is(tmp_path: Path) -> None:
    """Gradescope hands the grader one student's upload: its name is no student id to check."""
    (tmp_path / f"Copy of {SLUG} (1).ipynb").write_bytes(NOTEBOOK.read_bytes())
    [only] = discover(tmp_path, SLUG)
    assert only.problem is None and only.assignment == SLUG


def test_a_marker_a_student_uploads_never_drops_their_folder(tmp_path: Path) -> None:
    """A folder with the OUT marker and no notebook is a run's output, passed over (a run
    writes JSON, CSV, HTML and text); one with a notebook too (a student who uploaded a file
    of that name) is never passed over: it is refused with a row that says what to do."""
    from attnkit_autograder.classes.discovery import OUT_MARKER

    bob = tmp_path / "class" / "bob"
    (bob / "results").mkdir(parents=True)
    (bob / OUT_MARKER).write_text("")
    (bob / "results" / "02_self_attention.ipynb").write_text("{}")
    old_run = tmp_path / "class" / "grades-2025"
    (old_run / "results" / "ann-1").mkdir(parents=True)
    (old_run / OUT_MARKER).write_text("")
    (old_run / "grades.json").write_text("{}")
    (old_run / "results" / "ann-1" / "02_self_attention.json").write_text("{}")
    (old_run / "feedback" / "ann-1").mkdir(parents=True)
    (old_run / "feedback" / "ann-1" / "02_self_attention.html").write_text("<p>report</p>")
    (found,) = discover(tmp_path / "class")
    assert found.student == "bob"
    assert found.problem is not None
    assert f"delete {OUT_MARKER}" in found.problem
