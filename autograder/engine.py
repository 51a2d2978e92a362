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
from attnkit.diagnosis import (
    RecordingImplementation,
    diagnose,
    failing_helpers,
    fix_helpers_first,
)
from attnkit.errors import KitError
from attnkit.forbidden import scan_source, tampering
from attnkit.notebook_code import Cell, NotebookError, read_cells
from attnkit.outcome import ERROR, FAILED, FORBIDDEN, INTERNAL, PASSED, TIMEOUT, Outcome

from .discovery import Submission
from .harness import run_suite
from .rubric import GradedCell, graded_cells
from .sandbox import level_of

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
    cell_timeout: float = 30.0
    """Seconds one notebook cell may run before it is stopped (the next cell still runs)."""
    sandbox: bool = True
    """False only for --no-sandbox: trusted code, run without isolation (recorded in results)."""
    sandbox_user: str | None = None
    """--sandbox-user: isolate by a separate unprivileged user instead of bubblewrap."""

    def sandbox_settings(self) -> Any:
        from .sandbox import SandboxSettings, find_verdict

        return SandboxSettings(enabled=self.sandbox, user=self.sandbox_user, verdict=find_verdict())


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


def static_notes(slug: str, cells: list[Cell]) -> list[str]:
    """Notes for the instructor from reading the code: never a verdict, never a point lost.

    Forbidden names that appear in the source (the runtime recorder decides whether they
    were called by an exercise), and code that reaches into the grader's machinery.
    """
    forbidden = sorted({call for e in ASSIGNMENTS[slug].exercises for call in e.forbidden})
    notes = []
    for cell in cells:
        for line, call in scan_source(cell.source, forbidden):
            notes.append(
                f"code cell {cell.index}, line {line}: mentions {call} (for the instructor: "
                "only a call made while an exercise runs costs points)"
            )
    for finding in tampering((c.index, c.source) for c in cells):
        notes.append(f"{finding.note()} (for the instructor: this code reaches into the grader)")
    return notes[:50]


def score_cells(slug: str, verdicts: list[Outcome]) -> list[dict[str, Any]]:
    """One entry per graded cell: full points only when every hidden test of it passed.

    A forbidden call counts only as the runtime recorder saw it: a ``forbidden`` verdict.
    """
    tests = []
    for cell in graded_cells(slug):
        mine = [v for v in verdicts if v.grade_id == cell.grade_id]
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
    """Name the classic mistake behind each failing exercise, in dependency order.

    An exercise whose helpers (``Exercise.uses``) fail is told to fix them first and gets
    no name: its mistakes are built on correct helpers, so they cannot explain it. Passing
    cells are never annotated; a name is given only when the evidence singles it out
    (see attnkit.diagnosis).
    """
    from attnkit_solutions.exercises import reference_namespace

    explained = (FAILED, ERROR, FORBIDDEN)
    failing = {t["exercise"] for t in tests if t["status"] in explained}
    base = reference_namespace(slug)
    found: dict[str, Any] = {}
    for test in tests:
        exercise = test["exercise"]
        if test["status"] not in explained:
            continue
        helpers = failing_helpers(slug, exercise, failing)
        if helpers:
            test["hint"] = fix_helpers_first(exercise, helpers)
            continue
        if exercise not in found:
            found[exercise] = quietly(diagnose, slug, exercise, calls.get(exercise, []), base)
        mistake = found[exercise]
        if mistake is not None:
            test["diagnosis"] = {
                "id": mistake.id,
                "title": mistake.title,
                "symptom": mistake.symptom,
            }
            test["hint"] = mistake.hint


def better_of(first: list[Outcome], second: list[Outcome]) -> list[Outcome]:
    """Per graded cell, the verdicts of whichever run passed more of that cell's tests."""
    chosen = []
    for grade_id in dict.fromkeys(v.grade_id for v in first + second):
        a = [v for v in first if v.grade_id == grade_id]
        b = [v for v in second if v.grade_id == grade_id]
        passes = [sum(v.status == PASSED for v in a), sum(v.status == PASSED for v in b)]
        chosen += b if b and passes[1] > passes[0] else a
    return chosen


def grade_submission(
    submission: Submission, settings: GradeSettings, slot: int = 0
) -> dict[str, Any]:
    """Grade one submission; never raises for anything the submission does.

    The submission's cells run in order in the sandbox (Jupyter's Run All), then the hidden
    suite calls its exercises there. The graded definition of each exercise is the last one
    bound; where the one live at its graded cell differs, both are graded and the better
    counts (see attnkit.notebook_code).
    """
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
        cells = read_cells(submission.path)
    except NotebookError as exc:
        return error_record(submission, str(exc))
    except OSError as exc:
        return error_record(submission, f"{submission.path}: cannot be read ({exc.strerror})")
    if not any(c.source.strip() for c in cells):
        return error_record(submission, f"{submission.path}: has no code (nothing to grade)")

    exercises = tuple(e.name for e in ASSIGNMENTS[slug].exercises)
    impl = IsolatedSubmission(
        cells,
        call_timeout=settings.call_timeout,
        cell_timeout=settings.cell_timeout,
        budget=settings.budget,
        memory_bytes=settings.memory_mb * 1024**2,
        sandbox=settings.sandbox_settings(),
        watch=exercises,
        label=submission.key,
    )
    recorder = RecordingImplementation(impl)
    reference = reference_implementation(slug)
    heatmap = None
    try:
        verdicts = run_suite(recorder, slug, reference)
        live = {c.grade_id for c in cells if c.grade_id} & {c.grade_id for c in graded_cells(slug)}
        failing = {v.grade_id for v in verdicts if v.status != PASSED} & live
        for grade_id in sorted(failing):
            # The definition live at this graded cell, if the student redefined it below.
            again = run_suite(impl.with_variant(grade_id), slug, reference, {grade_id})
            impl.with_variant(None)
            verdicts = better_of(verdicts, again)
        if settings.feedback:
            from .feedback import collect_heatmap

            heatmap = collect_heatmap(slug, impl, reference)
    finally:
        impl.close()
    internal = [v for v in verdicts if v.status == INTERNAL]
    if internal:
        # A bug in the kit, not the student's doing: refuse to score rather than give a 0.
        return error_record(submission, internal[0].message)
    tests = score_cells(slug, verdicts)
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
        "notes": impl.notes + static_notes(slug, cells),
        "sandbox": level_of(settings.sandbox_settings()),
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
    # Start the sandbox first: it imports torch in its own process while this one imports
    # the references, so the two start-up costs overlap instead of adding up.
    from .sandbox import shared_zygote

    shared_zygote(settings.sandbox_settings())
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
