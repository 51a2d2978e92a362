"""Grade many submissions: in parallel, resumably, and without ever losing a result.

Each submission is graded by one of N grader processes (one per core by default). A
grader reads the notebook itself, runs the hidden suite here against the submission's
sandboxed workers, and writes one result file atomically:
``OUT/results/<student>/<assignment>.json``. Only then does the next submission start,
so an interrupted run loses at most the submissions in flight, and a rerun skips what
is already graded (unless ``force``, or the submitted file has changed since).

``grades.json`` and ``grades.csv`` are rebuilt from the result files at the end (and
on Ctrl-C), atomically. They hold no timings, so a resumed run writes exactly the same
files as an uninterrupted one. A lock file keeps two graders off the same OUT.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io
import json
import multiprocessing
import os
import queue
import signal
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from attnkit.assignments import ASSIGNMENTS
from attnkit.diagnosis import RecordingImplementation, diagnose
from attnkit.errors import KitError
from attnkit.forbidden import scan_source
from attnkit.notebook_code import Definitions, NotebookError, extract_definitions, read_code_cells

from .discovery import Submission
from .harness import ERROR, FAILED, FORBIDDEN, INTERNAL, PASSED, TIMEOUT, TestVerdict, run_suite
from .rubric import GradedCell, graded_cells

SCHEMA = "attnkit-grades/1"
MAX_SUBMISSION_BYTES = 32 * 1024**2
STATUS_ORDER = {PASSED: 0, FAILED: 1, ERROR: 2, TIMEOUT: 3, FORBIDDEN: 4}


@dataclass(frozen=True)
class GradeSettings:
    call_timeout: float = 10.0
    budget: float = 120.0
    memory_mb: int = 2048
    feedback: bool = False
    """Also collect what the feedback report shows (the attention heatmaps)."""


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def result_path(out: Path, submission: Submission) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in submission.student)
    return out / "results" / (safe or "_") / f"{submission.assignment or 'unknown'}.json"


# -- grading one submission -------------------------------------------------------------------


def cell_entry(
    cell: GradedCell,
    points: float,
    status: str,
    message: str,
    hint: str | None = None,
    checks_passed: int = 0,
    checks_total: int = 0,
) -> dict[str, Any]:
    """One graded cell's entry in a result (the ``tests`` list of grades.json)."""
    return {
        "grade_id": cell.grade_id,
        "exercise": cell.exercise,
        "points": points,
        "max_points": cell.points,
        "status": status,
        "message": message,
        "hint": hint,
        "checks_passed": checks_passed,
        "checks_total": checks_total,
        "diagnosis": None,
    }


def error_record(submission: Submission, reason: str) -> dict[str, Any]:
    slug = submission.assignment
    cells = graded_cells(slug) if slug in ASSIGNMENTS else ()
    return {
        "student": submission.student,
        "assignment": slug,
        "source": str(submission.path),
        "source_sha256": sha256_file(submission.path),
        "status": "error",
        "error": reason,
        "score": 0.0,
        "max_score": sum(c.points for c in cells),
        "tests": [cell_entry(c, 0.0, ERROR, reason) for c in cells],
        "notes": [],
    }


def forbidden_calls(slug: str, definitions: Definitions) -> dict[str, list[str]]:
    """Per exercise, the forbidden calls its code (or any shared helper or import) contains."""
    exercise_names = {e.name for e in ASSIGNMENTS[slug].exercises}
    shared = "\n".join(s.code for s in definitions.statements if not set(s.names) & exercise_names)
    found = {}
    for exercise in ASSIGNMENTS[slug].exercises:
        source = definitions.source_of(exercise.name) + "\n" + shared
        calls = scan_source(source, exercise.forbidden)
        if calls:
            found[exercise.name] = calls
    return found


def score_cells(
    slug: str, verdicts: list[TestVerdict], forbidden: dict[str, list[str]]
) -> list[dict[str, Any]]:
    """One entry per graded cell: full points only when every hidden test of it passed."""
    tests = []
    for cell in graded_cells(slug):
        mine = [v for v in verdicts if v.grade_id == cell.grade_id]
        if cell.exercise in forbidden:
            calls = ", ".join(forbidden[cell.exercise])
            mine = [
                TestVerdict(
                    v.test,
                    v.grade_id,
                    FORBIDDEN,
                    f"{cell.exercise} uses {calls}, which this exercise asks you to write yourself",
                )
                for v in mine
            ]
        passed = sum(v.status == PASSED for v in mine)
        worst = max(mine, key=lambda v: STATUS_ORDER[v.status]) if mine else None
        status = PASSED if mine and passed == len(mine) else (worst.status if worst else ERROR)
        failing = [v for v in mine if v.status != PASSED]
        first = failing[0] if failing else None
        tests.append(
            cell_entry(
                cell,
                cell.points if status == PASSED else 0.0,
                status,
                "" if first is None else first.message,
                None if first is None else first.hint,
                passed,
                len(mine),
            )
        )
    return tests


def quietly(function: Callable[..., Any], *args: Any) -> Any:
    """``function(*args)`` with its warnings and floating-point complaints silenced.

    Diagnosis replays the catalogue's wrong variants, which overflow, divide by zero and
    call deprecated APIs on purpose: those warnings describe the mistakes, not the run,
    and must never reach the instructor's terminal."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return function(*args)


def explain_failures(slug: str, tests: list[dict[str, Any]], calls: dict[str, list]) -> None:
    """Name the classic mistake behind each failing exercise, and failures inherited from
    an earlier exercise the failing one calls. Passing cells are never annotated."""
    from attnkit_solutions.exercises import reference_namespace

    explained = (FAILED, ERROR, FORBIDDEN)
    failing = {t["exercise"] for t in tests if t["status"] in explained}
    base = reference_namespace(slug)
    found = {e: quietly(diagnose, slug, e, calls.get(e, []), base) for e in sorted(failing)}
    assignment = ASSIGNMENTS[slug]
    for test in tests:
        if test["status"] not in explained:
            continue
        mistake = found.get(test["exercise"])
        if mistake is not None:
            test["diagnosis"] = {
                "id": mistake.id,
                "title": mistake.title,
                "symptom": mistake.symptom,
            }
            test["hint"] = mistake.hint
        upstream = sorted(set(assignment.exercise(test["exercise"]).uses) & failing)
        if upstream and mistake is None:
            test["hint"] = (
                f"{test['exercise']} calls your {', '.join(upstream)}, which fails its own "
                "tests: fix that first, and this may pass too."
            )


def grade_submission(
    submission: Submission, settings: GradeSettings, slot: int = 0
) -> dict[str, Any]:
    """Grade one submission; never raises for anything the submission does."""
    from .harness import reference_implementation
    from .isolation import IsolatedSubmission

    started = time.monotonic()
    if submission.problem:
        return error_record(submission, submission.problem)
    slug = submission.assignment
    if slug not in ASSIGNMENTS:
        return error_record(submission, f"unknown assignment {slug!r}")
    try:
        if submission.path.stat().st_size > MAX_SUBMISSION_BYTES:
            return error_record(submission, f"{submission.path} is larger than 32 MiB")
        exercises = {e.name for e in ASSIGNMENTS[slug].exercises}
        definitions = extract_definitions(read_code_cells(submission.path)).needed_for(exercises)
    except NotebookError as exc:
        return error_record(submission, str(exc))
    if not definitions.statements:
        return error_record(submission, f"{submission.path}: defines nothing (no code to grade)")

    impl = IsolatedSubmission(
        definitions,
        slot=slot,
        call_timeout=settings.call_timeout,
        budget=settings.budget,
        memory_bytes=settings.memory_mb * 1024**2,
        label=submission.key,
    )
    recorder = RecordingImplementation(impl)
    heatmap = None
    try:
        verdicts = run_suite(recorder, slug, reference_implementation(slug))
        if settings.feedback:
            from .feedback import collect_heatmap

            heatmap = collect_heatmap(slug, impl, reference_implementation(slug))
    finally:
        impl.close()
    internal = [v for v in verdicts if v.status == INTERNAL]
    if internal:
        # A bug in the kit, not the student's doing: refuse to score rather than give a 0.
        return error_record(submission, internal[0].message)
    tests = score_cells(slug, verdicts, forbidden_calls(slug, definitions))
    explain_failures(slug, tests, recorder.calls)
    return {
        "student": submission.student,
        "assignment": slug,
        "source": str(submission.path),
        "source_sha256": sha256_file(submission.path),
        "status": "graded",
        "error": None,
        "score": sum(t["points"] for t in tests),
        "max_score": sum(t["max_points"] for t in tests),
        "tests": tests,
        "notes": definitions.notes + impl.notes,
        "heatmap": heatmap,
        "run": {
            "seconds": round(time.monotonic() - started, 3),
            "workers_started": impl.spawned,
            "sandbox": impl.sandbox,
        },
    }


def grade_safely(submission: Submission, settings: GradeSettings, slot: int) -> dict[str, Any]:
    """grade_submission, with any failure of the grader itself recorded as an error."""
    try:
        return grade_submission(submission, settings, slot)
    except Exception as exc:  # a bug in the kit must not cost other students their grades
        return error_record(submission, f"the grader failed on this submission: {exc!r}"[:500])


# -- many submissions, in parallel ----------------------------------------------------------------


_stopping = False


def stop_on_sigterm(signum: int, frame: Any) -> None:
    """Stop grading now. KeyboardInterrupt, because pytest would record a SystemExit raised
    inside a test as that test's failure and carry on; KeyboardInterrupt ends its session."""
    global _stopping
    _stopping = True
    raise KeyboardInterrupt


def grader_process(slot: int, tasks: Any, results: Any, settings: GradeSettings) -> None:
    """One grader: take submissions from ``tasks``, write their result files, report back."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides when to stop
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    # Start the zygote first: it imports torch in its own process while this one imports
    # the references, so the two start-up costs overlap instead of adding up.
    from .isolation import zygote

    zygote()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            while not _stopping:
                item = tasks.get()
                if item is None:
                    return
                submission, target = Submission(**item[0]), Path(item[1])
                record = grade_safely(submission, settings, slot)
                if _stopping:
                    return  # never record a submission whose grading was cut short
                write_atomic(target, json.dumps(record, indent=1, sort_keys=True) + "\n")
                results.put((submission.key, record["status"]))
    except KeyboardInterrupt:
        return  # the worker was killed on the way out (grade_submission's finally)


@contextlib.contextmanager
def exclusive(out: Path) -> Iterator[None]:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".attnkit-grade.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KitError(
                f"another `attnkit grade` is writing to {out}.",
                "Wait for it to finish, or give this run a different --out.",
            ) from None
        yield


def already_graded(out: Path, submission: Submission, feedback: bool = False) -> bool:
    """Graded before, from the same file (and with the feedback data, if it is wanted now)."""
    path = result_path(out, submission)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if feedback and record.get("status") == "graded" and "heatmap" not in record:
        return False
    return record.get("source_sha256") == sha256_file(submission.path)


def pending(
    submissions: list[Submission], out: Path, settings: GradeSettings, force: bool = False
) -> list[Submission]:
    """The submissions that still need grading into ``out`` (all of them with ``force``)."""
    return [s for s in submissions if force or not already_graded(out, s, settings.feedback)]


def grade_all(
    todo: list[Submission],
    out: Path,
    settings: GradeSettings,
    jobs: int,
    progress: Callable[[int], Any] | None = None,
) -> tuple[int, bool]:
    """Grade ``todo`` (see :func:`pending`); returns (how many were graded, interrupted)."""
    if not todo:
        return 0, False
    context = multiprocessing.get_context("spawn")
    tasks, results = context.Queue(), context.Queue()
    for submission in todo:
        tasks.put((asdict(submission), str(result_path(out, submission))))
    jobs = max(1, min(jobs, len(todo)))
    for _ in range(jobs):
        tasks.put(None)
    graders = [
        # Not daemonic: a grader starts worker processes, which daemons may not do.
        context.Process(target=grader_process, args=(slot, tasks, results, settings))
        for slot in range(jobs)
    ]
    for grader in graders:
        grader.start()
    done = 0
    try:
        while done < len(todo):
            try:
                results.get(timeout=1.0)
            except queue.Empty:
                if not any(g.is_alive() for g in graders):
                    break  # every grader exited: nothing more will arrive
                continue
            done += 1
            if progress:
                progress(1)
    except KeyboardInterrupt:
        for grader in graders:
            if grader.is_alive():
                grader.terminate()
        for grader in graders:
            grader.join(timeout=30)
        return done, True
    for grader in graders:
        grader.join(timeout=30)
    return done, False


# -- the gradebook files ---------------------------------------------------------------------


def public_record(record: dict[str, Any]) -> dict[str, Any]:
    """A result without what changes from run to run (timings, sandbox details) and without
    the feedback report's bulky data."""
    return {k: v for k, v in record.items() if k not in ("run", "heatmap")}


def collect(out: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted((out / "results").glob("*/*.json")):
        with contextlib.suppress(OSError, ValueError):
            records.append(public_record(json.loads(path.read_text(encoding="utf-8"))))
    records.sort(key=lambda r: (r["student"], r["assignment"] or ""))
    return records


def write_gradebook(out: Path) -> list[dict[str, Any]]:
    records = collect(out)
    assignments = sorted({r["assignment"] for r in records if r["assignment"] in ASSIGNMENTS})
    document = {
        "schema": SCHEMA,
        "assignments": {
            slug: {
                "title": ASSIGNMENTS[slug].title,
                "max_score": sum(c.points for c in graded_cells(slug)),
                "cells": [asdict(c) for c in graded_cells(slug)],
            }
            for slug in assignments
        },
        "submissions": records,
    }
    write_atomic(out / "grades.json", json.dumps(document, indent=1, sort_keys=True) + "\n")
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["student", "assignment", "status", "score", "max_score", "error"])
    for r in records:
        writer.writerow(
            [
                r["student"],
                r["assignment"],
                r["status"],
                r["score"],
                r["max_score"],
                r["error"] or "",
            ]
        )
    write_atomic(out / "grades.csv", buffer.getvalue())
    return records


def summary_table(records: list[dict[str, Any]]) -> str:
    """Per graded cell: how many submissions passed it."""
    rows: dict[tuple[str, str], list[int]] = {}
    for record in records:
        for test in record["tests"]:
            counts = rows.setdefault((record["assignment"], test["grade_id"]), [0, 0])
            counts[0] += test["status"] == PASSED
            counts[1] += 1
    if not rows:
        return "no graded cells"
    width = max(len(g) for _, g in rows) + 2
    lines = [f"{'assignment':<24}{'graded cell':<{width}}passed"]
    for (slug, grade_id), (passed, total) in sorted(rows.items()):
        lines.append(f"{slug:<24}{grade_id:<{width}}{passed}/{total}")
    errors = sum(r["status"] == "error" for r in records)
    lines.append(f"{len(records)} submissions, {errors} could not be graded")
    return "\n".join(lines)
