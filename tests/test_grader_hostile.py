"""The grader against hostile and broken submissions: each earns exactly what its code earns.

All cases are graded in one run (two graders in parallel, short timeouts). Every case
is a correct lesson-2 notebook with its hostility planted in SelfAttention_v2 (worth 2
of 14 points, and used by no other exercise), so the expected scores are exact.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from attnkit_autograder.corpus import hostile_corpus
from attnkit_autograder.discovery import Submission, discover
from attnkit_autograder.engine import GradeSettings, grade_all, result_path, write_gradebook
from attnkit_autograder.isolation import SLOT_UID_BASE

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
HIDDEN_SUITE = ROOT / "autograder" / "suites" / "test_02_self_attention.py"

# case: (score out of 14, status of the SelfAttention_v2 cell, words its message contains)
EXPECTED = {
    "correct": (14, "passed", ""),
    "nbformat3": (14, "passed", ""),
    "prints_megabytes": (14, "passed", ""),
    "tampers_with_the_grader": (14, "passed", ""),
    "untouched_stubs": (0, "failed", "not implemented"),
    "patches_numpy_torch_builtins": (12, "failed", "wrong values"),
    "infinite_loop": (12, "timeout", "no answer after"),
    "infinite_loop_ignoring_signals": (12, "timeout", "no answer after"),
    "fork_bomb": (12, "timeout", "no answer after"),
    "unbounded_allocation": (12, "error", "memory"),
    "os_exit": (12, "error", "exited with status 3"),
    "segfault": (12, "error", "segmentation fault"),
    "reads_the_references": (12, "error", "Permission denied"),
    "returns_numpy": (12, "failed", "NumPy array"),
    "nan_output": (12, "failed", "NaN"),
    "forbidden_library_attention": (12, "forbidden", "scaled_dot_product_attention"),
    "deleted_test_cells": (12, "failed", "wrong values"),
    "edited_test_cells": (12, "failed", "wrong values"),
    "missing_class": (10, "error", "not defined"),
    "wrong_signature": (12, "passed", ""),
}
UNGRADABLE = {
    "malformed_json": "not valid notebook JSON",
    "not_utf8": "not UTF-8",
    "empty": "is empty",
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    grader_file = tmp / "grader-owned.txt"
    grader_file.write_text("original")
    out = tmp / "out"
    out.mkdir()
    (out / "grades.json").write_text("{}")
    suite_before = HIDDEN_SUITE.read_bytes()
    files = hostile_corpus(
        tmp / "submissions",
        ROOT / "assignments",
        [str(grader_file), str(out / "grades.json"), str(HIDDEN_SUITE)],
        secret=str(HIDDEN_SUITE),
    )
    submissions = discover(tmp / "submissions")
    settings = GradeSettings(call_timeout=3.0, budget=60.0, memory_mb=1024)
    done, interrupted, _ = grade_all(submissions, out, settings, jobs=2)
    records = {r["student"]: r for r in write_gradebook(out)}
    return {
        "records": records,
        "files": files,
        "done": done,
        "interrupted": interrupted,
        "grader_file": grader_file,
        "suite_before": suite_before,
        "out": out,
    }


def cell(record: dict, grade_id: str) -> dict:
    return next(t for t in record["tests"] if t["grade_id"] == grade_id)


def test_every_submission_gets_a_record_and_the_grader_survives(graded) -> None:
    assert not graded["interrupted"]
    assert set(graded["records"]) == set(EXPECTED) | set(UNGRADABLE)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_hostile_submission_earns_exactly_what_its_code_earns(graded, case) -> None:
    score, v2_status, words = EXPECTED[case]
    record = graded["records"][case]
    assert record["status"] == "graded", record["error"]
    assert record["score"] == score, [
        (t["grade_id"], t["status"], t["message"])
        for t in record["tests"]
        if t["status"] != "passed"
    ]
    v2 = cell(record, "test_v2_forward")
    assert v2["status"] == v2_status, v2
    assert words in v2["message"], v2


def test_wrong_signature_costs_the_weight_transfer(graded) -> None:
    transfer = cell(graded["records"]["wrong_signature"], "test_weight_transfer")
    assert transfer["status"] == "error" and "TypeError" in transfer["message"]


@pytest.mark.parametrize("case", sorted(UNGRADABLE))
def test_unreadable_submissions_are_errors_with_reasons_not_silent_zeros(graded, case) -> None:
    record = graded["records"][case]
    assert record["status"] == "error"
    assert UNGRADABLE[case] in record["error"]
    assert all(t["status"] == "error" for t in record["tests"])


def test_submissions_could_not_touch_the_grader_or_read_hidden_files(graded) -> None:
    assert graded["grader_file"].read_text() == "original"
    assert HIDDEN_SUITE.read_bytes() == graded["suite_before"]
    json.loads((graded["out"] / "grades.json").read_text())  # rewritten by us, valid
    correct = Submission("correct", "02_self_attention", Path())
    sandbox = json.loads(result_path(graded["out"], correct).read_text())["run"]["sandbox"]
    assert sandbox["landlock_abi"] >= 1


@pytest.mark.skipif(os.geteuid() != 0, reason="per-slot uids are used only when grading as root")
def test_no_sandbox_process_survives(graded) -> None:
    leftovers = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            uid = os.stat(f"/proc/{pid}").st_uid
        except FileNotFoundError:
            continue
        if SLOT_UID_BASE <= uid < SLOT_UID_BASE + 64:
            leftovers.append(pid)
    assert leftovers == []


PROBE = """
import numpy as np
def probe(paths):
    import importlib
    readable = []
    for path in paths:
        try:
            open(path, "rb").read(1)
            readable.append(1)
        except OSError:
            readable.append(0)
    imports = []
    for name in ("attnkit_solutions", "attnkit_autograder.harness", "statistics", "fractions"):
        try:
            importlib.import_module(name)
            imports.append(1)
        except Exception:
            imports.append(0)
    return np.array(readable + imports)
"""


def test_sandbox_reads_only_what_it_may() -> None:
    from attnkit.notebook_code import extract_definitions
    from attnkit_autograder.isolation import IsolatedSubmission

    secrets = [
        str(HIDDEN_SUITE),
        str(ROOT / "solutions" / "numpy_attention.py"),
        "/etc/shadow",
        str(ROOT / "autograder" / "mistakes.toml"),
    ]
    sandbox = IsolatedSubmission(extract_definitions([PROBE]), call_timeout=30, budget=60)
    try:
        result = sandbox.run(
            "call_function", name="probe", args=[secrets], kwargs={}, framework="numpy"
        )
    finally:
        sandbox.kill()
    flags = result["out"]["array"].tolist()
    assert flags[: len(secrets)] == [0] * len(secrets), "a secret file was readable"
    assert flags[len(secrets) :] == [0, 0, 1, 1], "references importable, or stdlib not"
