"""Discovery, the wire format, resuming, interruption and two graders on one OUT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from attnkit.student_process.wire import WireError, decode, encode
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.classes.discovery import discover

ROOT = Path(__file__).resolve().parents[1]


# --- the wire ----------------------------------------------------------------------------------


def test_wire_round_trips_plain_data() -> None:
    value = {
        "out": {"kind": "tensor", "array": np.arange(6, dtype=np.float32).reshape(2, 3)},
        "scalar": np.asarray(3),
        "mask": np.array([[True, False]]),
        "nested": [1, 2.5, None, "text", {"x": np.float64(np.nan)}],
    }
    back = decode(encode(value))
    np.testing.assert_array_equal(back["out"]["array"], value["out"]["array"])
    assert back["out"]["array"].dtype == np.float32
    assert back["scalar"].shape == () and back["scalar"] == 3
    assert back["mask"].dtype == bool
    assert back["nested"][:4] == [1, 2.5, None, "text"] and np.isnan(back["nested"][4]["x"])


@pytest.mark.parametrize(
    "message",
    [
        b"",
        b"\x00" * 7,
        (10**9).to_bytes(8, "big") + b"{}",
        (2).to_bytes(8, "big") + b"{x",
        (52).to_bytes(8, "big") + b'{"__nd__": [0, 8], "dtype": "|O", "shape": [1], "a": 1}',
        (57).to_bytes(8, "big")
        + b'{"__nd__": [0, 16], "dtype": "<f8", "shape": [1], "x": 1}'
        + b"\x00" * 16,
        (52).to_bytes(8, "big") + b'{"__nd__": [0, 8], "dtype": "<f8", "shape": [1], "a":1}',
    ],
)
def test_wire_rejects_malformed_or_dangerous_messages(message: bytes) -> None:
    with pytest.raises(WireError):
        decode(message)


# --- discovery ---------------------------------------------------------------------------------


def test_discovery_reads_all_three_layouts(tmp_path: Path) -> None:
    nb = released_path("02_self_attention", ROOT / "assignments").read_bytes()
    nbgrader = tmp_path / "course" / "submitted"
    (nbgrader / "ann" / "02_self_attention").mkdir(parents=True)
    (nbgrader / "ann" / "02_self_attention" / "02_self_attention.ipynb").write_bytes(nb)
    found = discover(tmp_path / "course")
    assert [(s.student, s.assignment) for s in found] == [("ann", "02_self_attention")]

    folders = tmp_path / "folders"
    (folders / "ben").mkdir(parents=True)
    (folders / "ben" / "my work.ipynb").write_bytes(nb)  # assignment from the metadata
    (folders / "cat").mkdir()
    (folders / "cat" / "01_numpy_attention.py").write_text("def softmax(x, axis=-1): pass")
    (folders / "dan").mkdir()  # an empty folder is listed, with the reason
    assert {(s.student, s.assignment, s.problem is None) for s in discover(folders)} == {
        ("ben", "02_self_attention", True),
        ("cat", "01_numpy_attention", True),
        ("dan", None, False),
    }

    files = tmp_path / "files"
    files.mkdir()
    (files / "eve_02_self_attention.ipynb").write_bytes(nb)
    (files / "fay.ipynb").write_text("{}")
    found = {s.student: s for s in discover(files)}
    assert found["eve"].assignment == "02_self_attention"
    assert found["fay"].assignment is None and "which assignment" in found["fay"].problem
    assert discover(files, "01_numpy_attention")[1].assignment == "01_numpy_attention"
    single = discover(files / "eve_02_self_attention.ipynb")
    assert [(s.student, s.assignment) for s in single] == [("eve", "02_self_attention")]


# --- resume, interruption, concurrency ------------------------------------------------------------


def small_corpus(folder: Path, count: int, looping: int | None = None) -> Path:
    """Even students correct, odd ones untouched stubs; student `looping` loops forever."""
    released = released_notebook("01_numpy_attention", ROOT / "assignments")
    correct = fill_notebook(released, "01_numpy_attention")
    loops = fill_notebook(
        released, "01_numpy_attention", {"embed_one_hot": "while True:\n    pass"}
    )
    for index in range(count):
        notebook = loops if index == looping else correct if index % 2 == 0 else released
        write_notebook(notebook, folder / f"student{index:02d}_01_numpy_attention.ipynb")
    return folder


def grade_command(submissions: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "attnkit",
        "grade",
        str(submissions),
        "--out",
        str(out),
        "--jobs",
        "1",
        "--timeout",
        "5",
        *extra,
    ]


@pytest.mark.slow
def test_interrupted_run_resumes_to_the_same_gradebook(tmp_path: Path) -> None:
    # Student 2 loops (its timeout takes seconds), so the run is still busy when interrupted.
    submissions = small_corpus(tmp_path / "subs", 6, looping=2)
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    assert (
        subprocess.run(
            grade_command(submissions, straight), capture_output=True, timeout=600
        ).returncode
        == 0
    )

    process = subprocess.Popen(
        grade_command(submissions, interrupted), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 300
    while len(list((interrupted / "results").glob("*/*.json"))) < 2:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr.decode()
    assert b"Traceback" not in stderr and b"resume" in stderr
    partial = json.loads((interrupted / "grades.json").read_text())["submissions"]
    assert len(partial) == 6  # every submission: the unfinished ones INCOMPLETE, no score
    assert 2 <= sum(r["status"] != "incomplete" for r in partial) < 6
    assert all(r["score"] is None for r in partial if r["status"] == "incomplete")
    assert not list(interrupted.rglob("*.tmp"))

    rerun = subprocess.run(
        grade_command(submissions, interrupted), capture_output=True, timeout=600
    )
    assert rerun.returncode == 0 and b"already graded" in rerun.stdout
    assert (interrupted / "grades.json").read_bytes() == (straight / "grades.json").read_bytes()
    assert (interrupted / "grades.csv").read_bytes() == (straight / "grades.csv").read_bytes()
    scores = [s["score"] for s in json.loads((straight / "grades.json").read_text())["submissions"]]
    assert scores == [13.0, 0.0, 12.0, 0.0, 13.0, 0.0]


@pytest.mark.slow
def test_a_second_grader_on_the_same_out_is_refused(tmp_path: Path) -> None:
    submissions = small_corpus(tmp_path / "subs", 2)
    out = tmp_path / "out"
    first = subprocess.Popen(
        grade_command(submissions, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 120
    while not (out / ".attnkit-grade.lock").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    second = subprocess.run(grade_command(submissions, out), capture_output=True, timeout=120)
    assert first.wait(timeout=600) == 0
    assert second.returncode == 1 and b"another `attnkit grade` is writing" in second.stderr
    assert len(json.loads((out / "grades.json").read_text())["submissions"]) == 2


@pytest.mark.slow
def test_force_and_changed_files_are_regraded(tmp_path: Path) -> None:
    submissions = small_corpus(tmp_path / "subs", 2)
    out = tmp_path / "out"
    subprocess.run(grade_command(submissions, out), check=True, capture_output=True, timeout=600)
    again = subprocess.run(grade_command(submissions, out), capture_output=True, timeout=600)
    assert b"2 submission(s) already graded" in again.stdout
    # The stub notebook is replaced by a correct one: it must be regraded without --force.
    correct = (submissions / "student00_01_numpy_attention.ipynb").read_bytes()
    (submissions / "student01_01_numpy_attention.ipynb").write_bytes(correct)
    changed = subprocess.run(grade_command(submissions, out), capture_output=True, timeout=600)
    assert b"1 submission(s) already graded" in changed.stdout
    scores = [s["score"] for s in json.loads((out / "grades.json").read_text())["submissions"]]
    assert scores == [13.0, 13.0]
    forced = subprocess.run(
        grade_command(submissions, out, "--force"), capture_output=True, timeout=600
    )
    assert forced.returncode == 0 and b"already graded" not in forced.stdout


def test_grade_reports_missing_input_without_traceback(tmp_path: Path) -> None:
    done = subprocess.run(
        grade_command(tmp_path / "nothing-here", tmp_path / "out"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "does not exist" in done.stderr
    assert "Traceback" not in done.stderr
    os.makedirs(tmp_path / "empty")
    done = subprocess.run(
        grade_command(tmp_path / "empty", tmp_path / "out"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "found no submissions" in done.stderr
