"""`attnkit grade` with every piece but the grading itself: run as
``python tests/fake_grading.py SUBMISSIONS OUT [--force] [--feedback] [--delay SECONDS]
[--only ID]...`` (or ``python tests/fake_grading.py regrade OUT [--only ID]...``), it
grades each
submission with a grader that waits ``--delay`` and records every graded cell as passed,
through the real supervisor, result files and gradebook. Tests interrupt it at any moment."""

from __future__ import annotations

import functools
import multiprocessing
import signal
import sys
import time
from pathlib import Path
from typing import Any

from attnkit_autograder.classes import grade, supervisor
from attnkit_autograder.classes.results import deliver
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings
from attnkit_autograder.grading.records import error_record
from attnkit_autograder.grading.submission import Submission


def make_class(folder: Path, count: int, slug: str = "01_numpy_attention") -> Path:
    """``count`` one-line submissions of ``slug`` (student00 to ...) in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        (folder / f"student{index:02d}_{slug}.py").write_text(
            f"def softmax(x):\n    return {index}\n"
        )
    return folder


def quick_grader(number: int, tasks: Any, results: Any, settings: GradeSettings) -> None:
    """Speaks grader_process's protocol; every cell passes after ``DELAY`` seconds."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as grader_process: the run decides
    signal.signal(signal.SIGTERM, supervisor.stop_on_sigterm)
    try:
        serve(number, tasks, results, settings)
    except KeyboardInterrupt:
        return  # stopped by the supervisor


def serve(number: int, tasks: Any, results: Any, settings: GradeSettings) -> None:
    while (item := tasks.get()) is not None:
        index, fields, target = item
        submission = Submission(**fields)
        results.send(("start", number, index, ""))
        time.sleep(DELAY)
        record = error_record(submission, "")
        record["status"], record["error"] = "graded", None
        for test in record["tests"]:
            test["points"], test["status"] = test["max_points"], "passed"
        record["score"] = record["max_score"]
        record["heatmap"] = None  # what a feedback report wants: no maps for this lesson
        outcome, detail = deliver(record, Path(target), settings.stamp)
        results.send((outcome, number, index, detail))


DELAY = 0.1


def main(argv: list[str]) -> int:
    global DELAY
    if argv[0] == "regrade":  # regrade OUT [--only ID]...: attnkit regrade, graded as above
        argv = argv[1:]
        argv.insert(0, "")
    submissions, out = Path(argv[0]), Path(argv[1])
    if "--delay" in argv:
        DELAY = float(argv[argv.index("--delay") + 1])
    fork = multiprocessing.get_context("fork")
    supervisor.grader_context = lambda: fork  # no forkserver loading PyTorch
    grade.start_grader_server = lambda: None
    supervisor.grade_all = functools.partial(supervisor.grade_all, grader=quick_grader)
    only = tuple(argv[i + 1] for i, arg in enumerate(argv) if arg == "--only")
    request = grade.GradeRequest(
        submissions,
        out,
        GradeOptions(no_sandbox=True, feedback="--feedback" in argv),
        jobs=2,
        force="--force" in argv,
        only=only,
    )
    print("grading starts", file=sys.stderr, flush=True)
    try:
        if not argv[0]:
            from attnkit_autograder.classes import regrade

            isolation = {"no_sandbox": True, "sandbox_user": None}
            return regrade.regrade(out, jobs=2, isolation=isolation, only=only)
        return grade.grade(request).code
    except KeyboardInterrupt:
        print("attnkit grade: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
