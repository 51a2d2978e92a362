"""Two `attnkit grade` runs at once, on different OUTs, each with hostile submissions.

Each run has its own sandbox (its own PID namespace), so a submission that signals
everything it can see, or loops until it is killed, cannot touch the other run: both
finish, and every correct student in either run gets full marks.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_cases import MAX_SCORE, Targets, build_corpus, cases

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow
HOSTILE = ("signal_the_zygote", "infinite_loop", "fork_and_spawn")


def test_two_grade_runs_at_once_both_finish_with_correct_marks(tmp_path) -> None:
    targets = Targets(secrets=(str(ROOT / "README.md"),), writable=(), repo=str(ROOT))
    wanted = {"correct", "zz_correct_classmate", *HOSTILE}
    assert wanted <= {c.name for c in cases(targets)}
    runs = []
    for run in ("first", "second"):
        folder = tmp_path / run / "submissions"
        corpus = build_corpus(folder, ROOT / "assignments", targets, only=wanted)
        out = tmp_path / run / "out"
        command = [
            str(Path(sys.executable).with_name("attnkit")),
            "grade",
            str(folder),
            "--out",
            str(out),
            "--jobs",
            "1",
            "--timeout",
            "3",
            "--cell-timeout",
            "5",
            "--budget",
            "60",
            "--memory-mb",
            "1024",
        ]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        runs.append((out, corpus, process))
    for out, corpus, process in runs:
        output, _ = process.communicate(timeout=600)
        assert process.returncode == 0, output.decode(errors="replace")[-2000:]
        document = json.loads((out / "grades.json").read_text())
        records = {s["student"]: s for s in document["submissions"]}
        assert set(records) == wanted
        for name in wanted:
            case = corpus[name][0]
            assert records[name]["score"] == case.score, (name, records[name]["tests"])
        assert records["correct"]["score"] == records["zz_correct_classmate"]["score"] == MAX_SCORE
