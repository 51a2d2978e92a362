"""A grading run never loses, mixes up or stalls a grade: supervision, completeness, a class
of 300 with broken files mixed in, SIGKILL and resume, concurrent runs, graders killed."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.classes import grader_server, results, supervisor
from attnkit_autograder.classes.results import deliver, missing
from attnkit_autograder.classes.supervisor import grade_all
from attnkit_autograder.grading import pipeline
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings
from attnkit_autograder.grading.records import error_record
from attnkit_autograder.grading.submission import Submission

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"
FAST = GradeSettings(GradeOptions(budget=1.0), overrun_grace=1.0)


# --- the supervisor, with graders that misbehave on purpose -----------------------------------


def misbehaving_grader(number: int, tasks: Any, results: Any, settings: GradeSettings) -> None:
    """Speaks grader_process's protocol; the student's name says how it misbehaves."""
    while (item := tasks.get()) is not None:
        index, fields, target = item
        submission = Submission(**fields)
        if submission.student.startswith("mute"):
            time.sleep(600)  # never says it started
        results.send(("start", number, index, ""))
        seen = submission.path.with_suffix(".seen")
        if submission.student.startswith("slow"):
            time.sleep(600)
        if submission.student.startswith("dies"):
            os._exit(3)
        if submission.student.startswith("flaky") and not seen.exists():
            seen.touch()
            os.kill(os.getpid(), signal.SIGKILL)
        if submission.student.startswith("torn"):  # dies halfway through a message
            os.write(results.fileno(), struct.pack("!i", 1000) + b"half a mess")
            os._exit(4)
        if submission.student.startswith("babble"):  # a frame that is not a message
            os.write(results.fileno(), struct.pack("!i", 5) + b"\x80\x05no.")
            time.sleep(600)
        if submission.student.startswith("full"):
            results.send(("lost", number, index, "the disk holding OUT is full"))
            continue
        record = {**error_record(submission, ""), "status": "graded", "error": None}
        outcome, detail = deliver(record, Path(target))
        results.send((outcome, number, index, detail))


def fake_class(folder: Path, students: list[str]) -> list[Submission]:
    folder.mkdir(parents=True, exist_ok=True)
    return [
        Submission(name, SLUG, folder / f"{name}.py", None, f"{i:064x}")
        for i, name in enumerate(students)
    ]


@pytest.mark.slow
def test_overruns_deaths_and_flaky_graders_all_end_with_a_result(tmp_path: Path) -> None:
    todo = fake_class(tmp_path / "subs", ["ann", "slow", "dies", "flaky", "ben"])
    out = tmp_path / "out"
    started = time.monotonic()
    outcome = grade_all(todo, out, FAST, jobs=2, grader=misbehaving_grader)
    assert time.monotonic() - started < 60  # the sleeper was stopped, not waited for
    assert outcome.graded == 5 and not outcome.interrupted and outcome.lost == {}
    records = {r["student"]: r for r in results.collect(results.result_paths(out, todo))}
    assert {s: r["status"] for s, r in records.items()} == {
        "ann": "graded",
        "slow": "error",
        "dies": "error",
        "flaky": "graded",  # killed once, retried, graded
        "ben": "graded",
    }
    assert records["slow"]["error"].startswith("timeout: grading used up")
    assert {t["status"] for t in records["slow"]["tests"]} == {"timeout"}
    assert "exited with status 3 twice" in records["dies"]["error"]
    assert "not of the submission" in records["dies"]["error"]
    # The grader's fault is not a result: the run is incomplete, and a rerun retries it.
    assert [s.student for s in missing(todo, out)] == ["dies"]


@pytest.mark.slow
def test_a_grader_torn_halfway_through_a_message_costs_no_one_else(tmp_path: Path) -> None:
    """Each grader speaks on a channel of its own: one that dies mid-message (SIGKILL, the
    OOM killer) or writes garbage is replaced, and its neighbours are still heard. On one
    queue shared by all graders, a torn frame left every later message unread, and the run
    waited on the slow grader for ever."""
    todo = fake_class(tmp_path / "subs", ["ann", "torn", "slow", "babble", "ben", "cat"])
    out = tmp_path / "out"
    started = time.monotonic()
    outcome = grade_all(todo, out, FAST, jobs=3, grader=misbehaving_grader)
    assert time.monotonic() - started < 90
    assert outcome.graded == 6 and not outcome.interrupted and outcome.lost == {}
    records = {r["student"]: r for r in results.collect(results.result_paths(out, todo))}
    assert {s: r["status"] for s, r in records.items()} == {
        "ann": "graded",
        "torn": "error",
        "slow": "error",
        "babble": "error",
        "ben": "graded",
        "cat": "graded",
    }
    assert "exited with status 4 twice" in records["torn"]["error"]
    assert "stopped speaking the grader's protocol twice" in records["babble"]["error"]
    assert records["slow"]["error"].startswith("timeout: grading used up")


@pytest.mark.slow
def test_a_grader_that_never_starts_is_replaced_then_blamed(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(supervisor, "STARTUP_LIMIT", 10.0)  # room for a spawned start-up
    todo = fake_class(tmp_path / "subs", ["mute", "ann"])
    outcome = grade_all(todo, tmp_path / "out", FAST, jobs=1, grader=misbehaving_grader)
    records = {
        r["student"]: r for r in results.collect(results.result_paths(tmp_path / "out", todo))
    }
    assert outcome.graded == 2 and records["ann"]["status"] == "graded"
    assert "did not start grading within 10 s twice" in records["mute"]["error"]
    assert [s.student for s in missing(todo, tmp_path / "out")] == ["mute"]


@pytest.mark.slow
def test_a_full_disk_stops_handing_out_work_and_names_what_is_lost(tmp_path: Path) -> None:
    todo = fake_class(tmp_path / "subs", ["ann", "full", "ben", "cat", "dan"])
    outcome = grade_all(todo, tmp_path / "out", FAST, jobs=1, grader=misbehaving_grader)
    assert not outcome.interrupted
    assert [s.student for s in missing(todo, tmp_path / "out")] == ["full", "ben", "cat", "dan"]
    assert set(outcome.lost) == {results.result_path(tmp_path / "out", s) for s in todo[1:]}
    reasons = [outcome.lost[results.result_path(tmp_path / "out", s)] for s in todo[1:]]
    assert reasons[0] == "the disk holding OUT is full"
    assert set(reasons[1:]) == {
        "not graded: the run stopped handing out work because the disk holding OUT is full"
    }


def test_a_result_that_cannot_be_written_is_reported_not_raised(tmp_path, monkeypatch) -> None:
    def full(path: Path, text: str) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "stage", full)
    outcome, detail = deliver({"status": "graded"}, tmp_path / "results" / "a" / "b.json")
    assert outcome == "lost" and "is full" in detail and "run the same command again" in detail


# --- real runs through the command line ----------------------------------------------------------


def grade_command(submissions: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "attnkit",
        "grade",
        str(submissions),
        "--out",
        str(out),
        "--timeout",
        "5",
        *extra,
    ]


def notebooks() -> tuple[dict, dict]:
    released = released_notebook(SLUG, ROOT / "assignments")
    return fill_notebook(released, SLUG), released


BROKEN = {  # file name -> (student id, words of the reason)
    "meta.ipynb": ("meta", "which assignment"),
    "deep.ipynb": ("deep", "nests JSON deeper"),
    f"latin1_{SLUG}.ipynb": ("latin1", "not UTF-8"),
    f"link_{SLUG}.ipynb": ("link", "symbolic link"),
    f"fifo_{SLUG}.ipynb": ("fifo", "not a regular file"),
    f"huge_{SLUG}.ipynb": ("huge", "over the 32 MiB limit"),
    f"empty_{SLUG}.ipynb": ("empty", "is empty"),
    f"s04-np-colab-copy_Copy of {SLUG}.ipynb": ("s04-np-colab-copy_Copy of", "renamed copy"),
    "half.ipynb": ("half", "not valid notebook JSON"),
    "emptyfolder": ("emptyfolder", "holds no notebook"),
}


def plant_broken(folder: Path, elsewhere: Path) -> None:
    (folder / "meta.ipynb").write_text('{"metadata": {"attnkit": {"assignment": []}}, "cells": []}')
    (folder / "deep.ipynb").write_text("[" * 100_000 + "]" * 100_000)
    (folder / f"latin1_{SLUG}.ipynb").write_bytes(b'{"cells": ["caf\xe9"]}')
    (folder / f"link_{SLUG}.ipynb").symlink_to(elsewhere)
    os.mkfifo(folder / f"fifo_{SLUG}.ipynb")
    with open(folder / f"huge_{SLUG}.ipynb", "wb") as huge:
        huge.truncate(33 * 1024**2)
    (folder / f"empty_{SLUG}.ipynb").write_text("")
    correct, _ = notebooks()
    write_notebook(correct, folder / f"s04-np-colab-copy_Copy of {SLUG}.ipynb")
    (folder / "half.ipynb").write_text('{"cells": [], "nbformat": 4, "metadata": {')
    (folder / "emptyfolder").mkdir()


def grader_state(number: int, tasks: Any, results: Any, settings: GradeSettings) -> None:
    """Writes, beside the one submission, what a grader inherits from the server."""
    import gc

    while (item := tasks.get()) is not None:
        index, fields, target = item
        submission = Submission(**fields)
        results.send(("start", number, index, ""))
        frozen = gc.get_freeze_count() > 100_000
        state = [gc.isenabled(), frozen, os.environ.get("OPENBLAS_NUM_THREADS")]
        submission.path.with_suffix(".state").write_text(json.dumps(state))
        record = {**error_record(submission, ""), "status": "graded", "error": None}
        outcome, detail = deliver(record, Path(target))
        results.send((outcome, number, index, detail))


@pytest.mark.slow
def test_graders_start_with_the_collector_on_and_the_servers_objects_frozen(tmp_path) -> None:
    """The server loads PyTorch with the collector off, then freezes what it loaded: a grader
    collects as usual, without walking those objects again; NumPy's BLAS keeps to one thread."""
    grader_server.start_grader_server()
    todo = fake_class(tmp_path / "class", ["ada"])
    assert grade_all(todo, tmp_path / "out", FAST, jobs=1, grader=grader_state).graded == 1
    state = json.loads(todo[0].path.with_suffix(".state").read_text())
    assert state == [True, True, "1"]


@pytest.mark.slow
def test_a_class_of_300_with_10_broken_files_is_all_accounted_for(tmp_path: Path) -> None:
    """20 notebooks graded for real, 270 cheap .py files the grader finds empty, 10 broken."""
    subs = tmp_path / "subs"
    correct, stub = notebooks()
    for i in range(20):
        write_notebook(correct if i % 2 == 0 else stub, subs / f"nb{i:03d}_{SLUG}.ipynb")
    for i in range(270):
        (subs / f"py{i:03d}_{SLUG}.py").write_text(f"# student {i}: nothing written yet\n")
    secret = tmp_path / "references.ipynb"
    write_notebook(correct, secret)
    plant_broken(subs, secret)
    out = tmp_path / "out"
    done = subprocess.run(
        grade_command(subs, out, "--jobs", "2"), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    rows = list(csv.DictReader((out / "grades.csv").open(newline="")))
    assert len(rows) == 300 and len({r["student"] for r in rows}) == 300
    by_student = {r["student"]: r for r in rows}
    for i in range(20):
        row = by_student[f"nb{i:03d}"]
        assert (row["status"], float(row["score"])) == ("graded", 13.0 if i % 2 == 0 else 0.0)
    for i in range(270):
        row = by_student[f"py{i:03d}"]
        assert row["status"] == "error" and "defines nothing" in row["error"]
    for student, words in BROKEN.values():
        row = by_student[student]
        assert row["status"] == "error" and words in row["error"], (student, row["error"])
    assert len(list((out / "results").glob("*/*.json"))) == 300
    assert {p.name for p in out.iterdir()} == {
        "results",
        "grades.json",
        "grades.csv",
        "class.json",
        ".attnkit-grade.lock",
    }
    assert not [p for p in tmp_path.rglob("*") if p.suffix == ".tmp"]


def small_class(folder: Path, count: int) -> Path:
    correct, stub = notebooks()
    for i in range(count):
        write_notebook(correct if i % 2 == 0 else stub, folder / f"student{i:02d}_{SLUG}.ipynb")
    return folder


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_to_identical_files(tmp_path: Path) -> None:
    subs = small_class(tmp_path / "subs", 8)
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    first = subprocess.run(grade_command(subs, straight, "--jobs", "1"), capture_output=True)
    assert first.returncode == 0, first.stderr.decode()[-2000:]

    process = subprocess.Popen(
        grade_command(subs, killed, "--jobs", "1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while len(list((killed / "results").glob("*/*.json"))) < 2:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.1)
    process.kill()
    process.wait()
    assert len(list((killed / "results").glob("*/*.json"))) < 8
    rerun = subprocess.run(
        grade_command(subs, killed, "--jobs", "1"), capture_output=True, timeout=600
    )
    assert rerun.returncode == 0 and b"already graded" in rerun.stdout
    for name in ("grades.json", "grades.csv"):
        assert (killed / name).read_bytes() == (straight / name).read_bytes(), name


@pytest.mark.slow
def test_two_runs_at_once_on_different_outs_both_complete(tmp_path: Path) -> None:
    subs = small_class(tmp_path / "subs", 4)
    runs = [
        subprocess.Popen(
            grade_command(subs, tmp_path / name, "--jobs", "1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for name in ("a", "b")
    ]
    for run in runs:
        _, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stderr.decode()[-2000:]
    grades = [json.loads((tmp_path / n / "grades.json").read_text()) for n in ("a", "b")]
    assert grades[0] == grades[1]
    assert [s["score"] for s in grades[0]["submissions"]] == [13.0, 0.0, 13.0, 0.0]
    # Each run graded in bubblewrap sandboxes of its own (separate PID namespaces).
    levels = {
        json.loads(p.read_text())["sandbox"]
        for n in ("a", "b")
        for p in (tmp_path / n / "results").glob("*/*.json")
    }
    assert levels == {"bubblewrap"}


def children_of(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def graders_of(pid: int) -> list[int]:
    """The grader processes a run started: the children of its forkserver."""
    found = []
    for child in children_of(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"forkserver" in command:
            found += children_of(child)
    return found


def busy(grader: int) -> bool:
    """The grader has started its forkserver, and the forkserver a sandboxed worker."""
    try:
        children = Path(f"/proc/{grader}/task/{grader}/children").read_text().split()
        return any(Path(f"/proc/{c}/task/{c}/children").read_text().split() for c in children)
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_a_grader_killed_from_outside_is_the_graders_fault_and_a_rerun_grades(tmp_path) -> None:
    subs = small_class(tmp_path / "subs", 1)
    out = tmp_path / "out"
    process = subprocess.Popen(
        grade_command(subs, out, "--jobs", "1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed: set[int] = set()
    deadline = time.monotonic() + 300
    while len(killed) < 2 and process.poll() is None:
        assert time.monotonic() < deadline
        for grader in graders_of(process.pid):
            if grader not in killed and busy(grader):
                os.kill(grader, signal.SIGKILL)
                killed.add(grader)
        time.sleep(0.05)
    _, stderr = process.communicate(timeout=300)
    assert len(killed) == 2
    assert process.returncode == 1, stderr
    assert "INCOMPLETE: 1 submission(s)" in stderr and "'student00'" in stderr
    assert "was killed by SIGKILL twice" in stderr
    # The gradebook lists it INCOMPLETE, with no score: a grader's failure is no grade.
    (row,) = json.loads((out / "grades.json").read_text())["submissions"]
    assert (row["status"], row["score"]) == ("incomplete", None)
    assert "was killed by SIGKILL twice" in row["error"]
    (result,) = (out / "results").glob("*/*.json")
    record = json.loads(result.read_text())
    assert record["fault"] == "grader" and "was killed by SIGKILL twice" in record["error"]
    assert "not of the submission" in record["error"]

    rerun = subprocess.run(grade_command(subs, out, "--jobs", "1"), capture_output=True)
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    record = json.loads((out / "grades.json").read_text())["submissions"][0]
    assert (record["status"], record["score"]) == ("graded", 13.0)


def test_a_worker_killed_from_outside_is_regraded_once(tmp_path: Path, monkeypatch) -> None:
    submission = fake_class(tmp_path, ["ann"])[0]
    graded = {**error_record(submission, ""), "status": "graded", "error": None}
    # What the zygote reported when it reaped the worker (tests/test_sandbox_state.py kills
    # a real one): killed by SIGKILL, neither by the reset nor by its own CPU limit.
    outside = {"sandbox": {"killed_from_outside": ["killed by SIGKILL"]}}
    cut_short = {**graded, "tests": [{**graded["tests"][0], "status": "error"}], "run": outside}
    answers = [cut_short, graded]
    monkeypatch.setattr(pipeline, "grade_submission", lambda *args: answers.pop(0))
    record = pipeline.grade_safely(submission, FAST)
    assert answers == [] and record["tests"] == graded["tests"]
    assert "killed by SIGKILL from outside the sandbox" in record["run"]["regraded"]
    assert "run" not in results.public_record(record)
    # Killed again: the second attempt's verdicts stand.
    answers = [cut_short, cut_short]
    record = pipeline.grade_safely(submission, FAST)
    assert answers == [] and record["tests"][0]["status"] == "error"


def test_the_sandboxes_load_matplotlib_only_when_a_submission_names_it(tmp_path: Path) -> None:
    from attnkit_autograder.classes.grade import names_matplotlib
    from attnkit_autograder.grading.submission import MAX_SUBMISSION_BYTES

    quiet, plotting, gone, pipe, link, refused = fake_class(
        tmp_path, ["quiet", "plotting", "gone", "pipe", "link", "refused"]
    )
    quiet.path.write_text("import torch\nx = torch.ones(2)\n")
    plotting.path.write_text("import matplotlib.pyplot as plt\n")
    assert not names_matplotlib([quiet])
    assert names_matplotlib([quiet, plotting])
    # A file that cannot be read counts as naming it: the sandbox is then as it always was.
    # It is read as the grader reads it: a pipe is not waited on, a link is not followed.
    assert names_matplotlib([quiet, gone])
    os.mkfifo(pipe.path)
    os.symlink("/dev/zero", link.path)
    started = time.monotonic()
    assert names_matplotlib([quiet, pipe]) and names_matplotlib([quiet, link])
    assert time.monotonic() - started < 5
    # A file bigger than a submission's code may be is not read here; nor is one that fails.
    big = dataclasses.replace(quiet, path=tmp_path / "big.ipynb")
    with open(big.path, "wb") as handle:
        handle.truncate(MAX_SUBMISSION_BYTES + 1)
    assert names_matplotlib([quiet, big])
    memory = dataclasses.replace(quiet, path=Path("/proc/self/mem"))
    assert names_matplotlib([quiet, memory])
    # A file discovery refused is never graded, whatever it holds.
    refused.path.write_text("import matplotlib\n")
    assert not names_matplotlib([quiet, dataclasses.replace(refused, problem="refused")])


@given(data=st.binary(max_size=256), name=st.sampled_from(["matplotlib", "pylab", "plt"]))
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_matplotlib_check_is_total_and_reads_only_the_names(
    tmp_path: Path, data: bytes, name: str
) -> None:
    """Any bytes at all: a verdict, never an exception, and the verdict is whether the file
    names matplotlib or pylab."""
    from attnkit_autograder.classes.grade import names_matplotlib

    (student,) = fake_class(tmp_path, ["any"])
    for content in (data, data + name.encode() + data):
        student.path.write_bytes(content)
        expected = b"matplotlib" in content or b"pylab" in content
        assert names_matplotlib([student]) is expected
