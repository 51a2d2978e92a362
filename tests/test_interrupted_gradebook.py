"""Ctrl-C at any moment never leaves a partial gradebook: grades.json and grades.csv are the
previous run's, byte for byte, or list every discovered submission, those not graded yet
marked INCOMPLETE with the reason; and the run says which."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import fake_grading
import pytest

from attnkit_autograder.classes import results

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"


def make_class(folder: Path, count: int) -> Path:
    return fake_grading.make_class(folder, count, SLUG)


def fake_grade(subs: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, str(ROOT / "tests" / "fake_grading.py"), str(subs), str(out), *extra]


def gradebook_pair(out: Path) -> tuple[bytes, bytes] | None:
    if not (out / "grades.json").exists():
        return None
    return (out / "grades.json").read_bytes(), (out / "grades.csv").read_bytes()


def assert_whole(out: Path, students: int) -> list[dict]:
    """The gradebook lists every discovered submission, graded or INCOMPLETE, and its CSV
    holds the same rows."""
    rows = json.loads((out / "grades.json").read_text())["submissions"]
    assert [r["student"] for r in rows] == [f"student{i:02d}" for i in range(students)]
    for row in rows:
        if row["status"] == "incomplete":
            assert row["score"] is None and row["error"].startswith("INCOMPLETE: ")
        else:
            assert row["status"] == "graded" and row["score"] == row["max_score"]
    table = list(csv.reader((out / "grades.csv").open(newline="")))
    assert [(r[0], r[2], r[3]) for r in table[1:]] == [
        (r["student"], r["status"], "" if r["score"] is None else f"{r['score']}") for r in rows
    ]
    return rows


def fresh_results(out: Path, since: float) -> int:
    """The result files written since ``since`` (the earlier run's are older)."""
    count = 0
    for path in (out / "results").glob("*/*.json"):
        with contextlib.suppress(FileNotFoundError):
            count += path.stat().st_mtime > since
    return count


@pytest.mark.parametrize("moment", range(8))
def test_ctrl_c_at_any_moment_leaves_the_previous_gradebook_or_a_whole_one(
    tmp_path: Path, moment: int
) -> None:
    subs = make_class(tmp_path / "subs", 8)
    before = tmp_path / "before"
    assert subprocess.run(fake_grade(subs, before), capture_output=True).returncode == 0
    previous = gradebook_pair(before)
    make_class(subs, 12)  # four more students hand in; the class is graded again, all of it
    out = tmp_path / "out"
    shutil.copytree(before, out)
    started = time.time()
    process = subprocess.Popen(
        fake_grade(subs, out, "--force", "--delay", "0.3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None and process.stderr.readline() == "grading starts\n"
    rng = random.Random(moment)
    if moment < 4:  # once 0, 3, 6 or 9 of the 12 have a new result
        deadline = time.monotonic() + 60
        while fresh_results(out, started) < 3 * moment and process.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.3))
    else:  # any time from the start: discovery, the class file, grading, writing
        time.sleep(rng.uniform(0.0, 0.05 if moment < 6 else 3.0))
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert "Traceback" not in stderr, stderr
    assert not list(out.rglob("*.tmp"))
    now = gradebook_pair(out)
    if process.returncode == 0:  # it finished first
        assert {r["status"] for r in assert_whole(out, 12)} == {"graded"}
        return
    assert process.returncode == 130, stderr
    if now == previous:
        assert "left as they were" in stderr, stderr
    else:
        rows = assert_whole(out, 12)
        unfinished = sum(r["status"] == "incomplete" for r in rows)
        assert f"all 12 submission(s), {unfinished} of them INCOMPLETE" in stderr, stderr
        assert all("interrupted" in r["error"] for r in rows if r["status"] == "incomplete")


def test_an_interrupt_between_the_two_renames_waits_for_the_second(
    tmp_path: Path, monkeypatch
) -> None:
    """SIGINT after grades.json is in place and before grades.csv is: both are replaced,
    then the interrupt is raised."""
    (tmp_path / "grades.json").write_text("old json")
    (tmp_path / "grades.csv").write_text("old csv")
    renames = []
    real_replace = os.replace

    def replace_then_interrupt(source: str, target: Path) -> None:
        real_replace(source, target)
        renames.append(target)
        if len(renames) == 1:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(results.os, "replace", replace_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        results.write_atomic_files(
            {tmp_path / "grades.json": "new json", tmp_path / "grades.csv": "new csv"}
        )
    assert (tmp_path / "grades.json").read_text() == "new json"
    assert (tmp_path / "grades.csv").read_text() == "new csv"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
