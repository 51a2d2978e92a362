"""Grade many submissions: in parallel, resumably, and without ever losing a result.

Each submission is graded by one of N grader processes (one per core by default). A
grader reads the notebook itself, runs the hidden suite here against the submission's
sandboxed workers, and writes one result file atomically:
``OUT/results/<student-slug>-<hash>/<assignment>.json``. Only then does the next
submission start, so an interrupted run loses at most the submissions in flight, and a
rerun skips what is already graded (unless ``force``, or the submitted file has changed).

The main process supervises the graders: one that overruns the submission's budget is
stopped and the submission gets a ``timeout`` record; one that dies is replaced and its
submission retried once, then recorded as the grader's error (retried again on the next
run). :func:`missing` tells which discovered submissions still have no result.

``grades.json`` and ``grades.csv`` are rebuilt from the result files at the end (and
on Ctrl-C), together and atomically. They hold no timings, so a resumed run writes
exactly the same files as an uninterrupted one. A lock file keeps two graders off the
same OUT; runs on different OUTs each have their own sandboxes, which cannot see each
other (see attnkit_autograder.sandbox).
"""

from __future__ import annotations

import contextlib
import csv
import ctypes
import errno
import fcntl
import hashlib
import io
import json
import multiprocessing
import os
import queue
import re
import shutil
import signal
import tempfile
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from attnkit.assignments import ASSIGNMENTS
from attnkit.diagnosis import (
    RecordingImplementation,
    failing_helpers,
    fix_helpers_first,
)
from attnkit.errors import KitError
from attnkit.files import as_new_file
from attnkit.forbidden import scan_source, tampering
from attnkit.notebook_code import Cell, NotebookError, first_line, read_cells
from attnkit.outcome import ERROR, FAILED, FORBIDDEN, INTERNAL, PASSED, TIMEOUT, Outcome

from .catalogue import diagnose
from .discovery import OUT_MARKER, Refused, Submission, read_submission_file, text_id
from .harness import run_suite
from .rubric import GradedCell, graded_cells
from .sandbox import level_of

SCHEMA = "attnkit-grades/1"
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

    overrun_grace: float = 15.0
    """Seconds beyond ``budget`` a grader may spend on one submission before it is stopped."""


def sha256_file(path: Path) -> str:
    """The digest of a regular file, read without following links; "" for anything else."""
    try:
        return hashlib.sha256(read_submission_file(path)).hexdigest()
    except Refused:
        return ""


def stage(path: Path, text: str) -> str:
    """Write ``text`` to a fsynced temporary file beside ``path``; returns its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        as_new_file(fd)  # not mkstemp's 0600: OUT is shared with TAs, a web folder
        # backslashreplace: a name that is not UTF-8 must never stop the gradebook's writing.
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def write_atomic_files(files: dict[Path, str]) -> None:
    """Write several files so that readers see all the old ones or all the new ones.

    Every file is staged in full first; only then are they renamed into place, which needs
    no disk space. A failure while staging (a full disk) leaves every old file untouched.
    """
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            staged.append((stage(path, text), path))
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    write_atomic_files({path: text})


def disk_advice(path: Path, exc: OSError) -> str:
    """What went wrong writing ``path``, and what to do about it."""
    where = path.parent
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        free = shutil.disk_usage(where).free if where.exists() else 0
        return (
            f"cannot write {path}: the disk holding {where} is full ({free // 1024} KiB free). "
            "Free some space there (a class needs a few MiB) and run the same command again: "
            "everything graded so far is kept"
        )
    return f"cannot write {path} ({exc.strerror or exc}): fix that and run the same command again"


STORAGE_CHARACTERS = re.compile(r"[^\w-]+")


def storage_name(student: str) -> str:
    """The folder that holds a student's results: a readable part plus a digest of the exact
    id, so ids that read alike (``li wei``, ``li_wei``) never share a folder, and no id
    (``..``, ``/``, control characters, 1,000 characters) can name a path outside it."""
    readable = STORAGE_CHARACTERS.sub("_", student)[:40].strip("_") or "student"
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{readable}-{digest}"


def result_path(out: Path, submission: Submission) -> Path:
    """``OUT/results/<storage name>/<assignment>.json``, always inside ``OUT/results``."""
    if submission.assignment in ASSIGNMENTS:
        name = submission.assignment
    else:  # several files of unknown assignment may belong to one student
        name = "unknown-" + hashlib.sha256(os.fsencode(submission.path)).hexdigest()[:12]
    results = out / "results"
    path = results / storage_name(submission.student) / f"{name}.json"
    # The parts are built above from [\w-] and a digest; this guards the guarantee itself.
    assert os.path.normpath(path).startswith(os.path.normpath(results) + os.sep), path
    assert len(path.relative_to(results).parts) == 2, path
    return path


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


def error_record(
    submission: Submission, reason: str, status: str = ERROR, fault: str = "submission"
) -> dict[str, Any]:
    """A submission that could not be graded: every graded cell 0 with ``status`` (``error``,
    or ``timeout`` when the budget ran out). ``fault: "grader"`` marks a failure of the
    grader itself, which a rerun grades again."""
    slug = submission.assignment
    cells = graded_cells(slug) if slug in ASSIGNMENTS else ()
    record = {
        "student": submission.student,
        "assignment": slug,
        "source": text_id(str(submission.path)),
        "source_sha256": submission.sha256 or sha256_file(submission.path),
        "status": "error",
        "error": reason,
        "score": 0.0,
        "max_score": sum(c.points for c in cells),
        "tests": [cell_entry(c, 0.0, status, reason) for c in cells],
        "notes": [],
    }
    if fault != "submission":
        record["fault"] = fault
    return record


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
    return notes


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
        if helpers and not test["message"].startswith(f"{exercise} is not defined"):
            # An exercise that is not even defined fails whatever its helpers do: "fix the
            # helper first" would point the student at the wrong cell.
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


IPYTHON_INPUT = re.compile(r"\s*\(<ipython-input-[^>]*>, line \d+\)")


def defines(source: str, name: str) -> bool:
    """Whether ``source`` holds ``def name`` or ``class name`` (read as text, so a cell that
    does not even parse still says what it meant to define)."""
    return (
        re.search(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(name)}\b", source, re.M)
        is not None
    )


def lead_with_cell_errors(
    tests: list[dict[str, Any]], cells: list[Cell], failures: dict[int, Any]
) -> None:
    """Say the real cause first: a failing exercise whose own cell raised (a SyntaxError, a
    NameError at definition time) leads with that cell's error, and gets no hint or mistake
    name that the tests' later symptoms ("is not defined") would suggest."""
    for test in tests:
        if test["status"] == PASSED:
            continue
        for cell in cells:
            failure = failures.get(cell.index)
            if failure is None or not defines(cell.source, test["exercise"]):
                continue
            at = f" at line {failure.line}" if failure.line else ""
            said = IPYTHON_INPUT.sub("", failure.message)  # the line is given already
            what = (
                f"ran out of its time{at}"
                if failure.status == "timeout"
                else f"raised {failure.error_type}{at}: {said}"
            )
            start = first_line(cell.source, 50)
            test["message"] = (
                f"the cell that defines {test['exercise']} (it starts `{start}`) "
                f"{what}. Fix that cell first: the tests then saw: {test['message']}"
            )
            test["hint"], test["diagnosis"] = None, None
            break


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
    from .isolation import IsolatedSubmission, WorkerCrashed, WorkerTimeout

    started = time.monotonic()
    if submission.problem:
        return error_record(submission, submission.problem)
    slug = submission.assignment
    if slug not in ASSIGNMENTS:
        return error_record(submission, f"unknown assignment {slug!r}")
    try:
        # Never through a link, never past the size limit (see discovery), and parsed under
        # this submission's budget: the clock started above.
        cells = read_cells(submission.path, read_submission_file(submission.path))
    except Refused as exc:
        return error_record(submission, str(exc))
    except NotebookError as exc:
        return error_record(submission, str(exc))
    if not any(
        line.strip() and not line.lstrip().startswith("#")
        for cell in cells
        for line in cell.source.splitlines()
    ):
        return error_record(submission, f"{submission.path}: defines nothing (no code to grade)")

    exercises = tuple(e.name for e in ASSIGNMENTS[slug].exercises)
    impl = IsolatedSubmission(
        cells,
        call_timeout=settings.call_timeout,
        cell_timeout=settings.cell_timeout,
        budget=max(settings.budget - (time.monotonic() - started), 0.0),
        memory_bytes=settings.memory_mb * 1024**2,
        sandbox=settings.sandbox_settings(),
        watch=exercises,
        label=submission.key,
    )
    recorder = RecordingImplementation(impl)
    reference = reference_implementation(slug)
    heatmap = None
    phases: dict[str, float] = {"reading": time.monotonic() - started}
    clock = time.monotonic()

    def lap(phase: str) -> None:
        nonlocal clock
        now = time.monotonic()
        phases[phase] = phases.get(phase, 0.0) + now - clock
        clock = now

    try:
        with contextlib.suppress(WorkerTimeout, WorkerCrashed):
            impl.prepare()  # the cells; a failure here is met again, per test, by the suite
        lap("cells")
        verdicts = run_suite(recorder, slug, reference)
        lap("hidden tests")
        failing = {v.grade_id for v in verdicts if v.status != PASSED}
        if failing:
            failing &= impl.redefined_at() & {c.grade_id for c in graded_cells(slug)}
        for grade_id in sorted(failing):
            # The definition live at this graded cell, if the student redefined it below.
            again = run_suite(impl.with_variant(grade_id), slug, reference, {grade_id})
            impl.with_variant(None)
            verdicts = better_of(verdicts, again)
        lap("definitions live at graded cells")
        if settings.feedback:
            from .heatmaps import collect_heatmap

            heatmap = collect_heatmap(slug, impl, reference)
            lap("heatmaps")
    finally:
        impl.close()
        lap("sandbox reset")
    internal = [v for v in verdicts if v.status == INTERNAL]
    if internal:
        # The same test fails for the reference (see harness.attribute_fault): a bug in the
        # kit, not the student's doing. Refuse to score rather than give a 0; a rerun retries.
        return error_record(submission, internal[0].message, fault="grader")
    tests = score_cells(slug, verdicts)
    explain_failures(slug, tests, recorder.calls)
    lead_with_cell_errors(tests, cells, impl.cell_failures)
    lap("diagnosis")
    return {
        "student": submission.student,
        "assignment": slug,
        "source": text_id(str(submission.path)),
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
            "phases": {k: round(v, 3) for k, v in phases.items()},
            "workers_started": impl.spawned,
            "sandbox": impl.sandbox,
        },
    }


MAX_NOTES = 40
MAX_NOTE_CHARS = 400
MAX_NOTES_CHARS = 8_000
"""A submission decides how many notes it causes (a cell that raises in a loop, a
thousand forbidden names): a record keeps this many, this long, and says how many more."""


def capped_notes(notes: list[str]) -> list[str]:
    """At most MAX_NOTES notes of at most MAX_NOTE_CHARS each, MAX_NOTES_CHARS in all; the
    last line says how many were left out."""
    kept: list[str] = []
    size = 0
    for note in notes:
        text = str(note)
        if len(text) > MAX_NOTE_CHARS:
            text = text[: MAX_NOTE_CHARS - 1] + "…"
        if len(kept) == MAX_NOTES or size + len(text) > MAX_NOTES_CHARS:
            break
        kept.append(text)
        size += len(text)
    if len(kept) < len(notes):
        kept.append(f"{len(notes) - len(kept)} more notes")
    return kept


def identified(record: dict[str, Any], submission: Submission) -> dict[str, Any]:
    """The record, with how the student was identified and what discovery noticed; its
    notes capped (see :func:`capped_notes`)."""
    record["id_rule"] = submission.id_rule
    record["notes"] = capped_notes([*submission.notes, *record.get("notes", [])])
    return record


def worker_killed(record: dict[str, Any]) -> list[str]:
    """Sandboxed workers of this grading that were killed from outside the sandbox (the OOM
    killer, an administrator), as the zygote reported when it reaped them: not by the
    grader's reset, not by the worker's own CPU limit, and a worker cannot SIGKILL itself.
    Never what the worker said about itself."""
    sandbox = record.get("run", {}).get("sandbox", {})
    killed = sandbox.get("killed_from_outside") if isinstance(sandbox, dict) else None
    return list(killed) if isinstance(killed, list) else []


def grade_safely(submission: Submission, settings: GradeSettings, slot: int) -> dict[str, Any]:
    """grade_submission, retried once if the grader itself fails or a worker is killed from
    outside. A second failure of the grader is recorded as the grader's error
    (``fault: "grader"``), never as the student's; a second kill keeps its verdicts."""
    from .sandbox import ensure_sandbox

    failures = []
    for attempt in range(2):
        if attempt == 1:
            with contextlib.suppress(Exception):  # grade_submission reports a sandbox failure
                ensure_sandbox(settings.sandbox_settings())
        try:
            record = grade_submission(submission, settings, slot)
        except Exception as exc:  # a bug in the kit must not cost other students their grades
            failures.append(repr(exc))
            continue
        killed = worker_killed(record)
        if attempt == 0 and killed:
            failures.append(f"a sandboxed worker was {killed[0]} from outside the sandbox")
            continue
        if attempt == 1:  # kept out of grades.json, which must not depend on such accidents
            record.setdefault("run", {})["regraded"] = failures[-1]
        return identified(record, submission)
    reason = (
        f"the grader failed twice on this submission ({failures[-1][:300]}): a fault of the "
        "grader, not of the submission. Run the same command again to retry it"
    )
    return identified(error_record(submission, reason, fault="grader"), submission)


# -- many submissions, in parallel ----------------------------------------------------------------


_stopping = False
CHECK_EVERY = 0.5
"""Seconds between the supervisor's checks for graders that died or overran."""
STARTUP_LIMIT = 600.0
"""Seconds a grader may take to start on a submission it was handed (its own start-up:
interpreter, torch, the references), before it is stopped and replaced."""
PR_SET_PDEATHSIG = 1


def stop_on_sigterm(signum: int, frame: Any) -> None:
    """Stop grading now. KeyboardInterrupt, because pytest would record a SystemExit raised
    inside a test as that test's failure and carry on; KeyboardInterrupt ends its session."""
    global _stopping
    _stopping = True
    raise KeyboardInterrupt


def die_with_parent() -> None:
    """Ask Linux to stop this grader when the run that started it dies (even by SIGKILL), so
    no orphan keeps grading into an OUT that a resumed run now owns."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def warm_up(slug: str | None) -> None:
    """Load the references of ``slug`` and their cached answers, by running its hidden suite
    against them once. This is the grader's own start-up cost: paid here, before the
    supervisor starts the clock, it is not charged to the first student's budget. Best
    effort: if it fails, the first submission simply pays for it."""
    if slug not in ASSIGNMENTS:
        return
    from .harness import reference_failures, reference_implementation

    with contextlib.suppress(Exception):
        reference_failures(slug, reference_implementation(slug))


def deliver(record: dict[str, Any], target: Path) -> tuple[str, str]:
    """Write a result file; ("done", status), or ("lost", why) when it cannot be written."""
    try:
        write_atomic(target, json.dumps(record, indent=1, sort_keys=True) + "\n")
    except OSError as exc:
        return "lost", disk_advice(target, exc)
    return "done", record["status"]


def grader_process(number: int, tasks: Any, results: Any, settings: GradeSettings) -> None:
    """One grader: take submissions from its own ``tasks``, write their result files, and
    tell the supervisor (``results``) when each starts and how it ended."""
    parent = os.getppid()
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides when to stop
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        # Start the sandbox first: it imports torch in its own process while this one
        # imports the references, so the two start-up costs overlap instead of adding up.
        from .sandbox import shared_zygote

        shared_zygote(settings.sandbox_settings())
        warmed: set[str | None] = set()
        with contextlib.redirect_stdout(io.StringIO()):
            while not _stopping:
                try:
                    item = tasks.get(timeout=1.0)
                except queue.Empty:
                    if os.getppid() != parent:
                        return  # the run is gone
                    continue
                if item is None:
                    return
                index, fields, target = item
                submission = Submission(**fields)
                if submission.assignment not in warmed:
                    warm_up(submission.assignment)
                    warmed.add(submission.assignment)
                # A sandbox that a failed reset ended is replaced now, before the clock.
                with contextlib.suppress(Exception):  # grade_submission reports a failure
                    shared_zygote(settings.sandbox_settings())
                results.put(("start", number, index, ""))
                record = grade_safely(submission, settings, number)
                if _stopping:
                    return  # never record a submission whose grading was cut short
                outcome, detail = deliver(record, Path(target))
                results.put((outcome, number, index, detail))
    except KeyboardInterrupt:
        return  # stopped by the supervisor (the worker was killed on the way out)


@contextlib.contextmanager
def exclusive(out: Path) -> Iterator[None]:
    """Hold OUT for this run; a second run on the same OUT is refused with what to do."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / OUT_MARKER, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise KitError(
                f"another `attnkit grade` is writing to {out}.",
                "Wait for it to finish, or give this run a different --out.",
            ) from None
        yield


def already_graded(out: Path, submission: Submission, feedback: bool = False) -> bool:
    """Graded before, from the same file (and with the feedback data, if it is wanted now);
    a result that records a fault of the grader does not count."""
    path = result_path(out, submission)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(record, dict) or record.get("fault") == "grader":
        return False
    if feedback and record.get("status") == "graded" and "heatmap" not in record:
        return False
    return record.get("source_sha256") == (submission.sha256 or sha256_file(submission.path))


def pending(
    submissions: list[Submission], out: Path, settings: GradeSettings, force: bool = False
) -> list[Submission]:
    """The submissions that still need grading into ``out`` (all of them with ``force``)."""
    return [s for s in submissions if force or not already_graded(out, s, settings.feedback)]


def missing(submissions: list[Submission], out: Path) -> list[Submission]:
    """The submissions with no current result in ``out``: a complete run has none."""
    return [s for s in submissions if not already_graded(out, s)]


def overrun_limit(settings: GradeSettings) -> float:
    """Seconds a grader may spend on one submission, from its first byte, before it is
    stopped: the budget for the notebook's cells and again for the hidden tests, plus room
    for the grader's own work around the sandboxed calls."""
    return 2 * settings.budget + max(settings.overrun_grace, settings.budget / 2)


def describe_grader_exit(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"was killed by {signal.Signals(-exitcode).name}"
    return f"exited with status {exitcode}"


class RunOutcome(NamedTuple):
    graded: int
    """Submissions that got a result file in this run."""
    interrupted: bool
    lost: dict[Path, str]
    """Result files that could not be written, and why (a full disk)."""


@dataclass
class Grader:
    """One grader process, and the submission it holds (an index into the run's list)."""

    number: int
    process: Any
    tasks: Any
    index: int | None = None
    assigned: float = 0.0
    """When the grader was handed its submission (monotonic clock)."""
    started: float | None = None
    """When it said it started on it: the budget's clock."""


@dataclass
class Supervisor:
    """Hands submissions to graders one at a time, and makes sure each ends with a result."""

    todo: list[Submission]
    out: Path
    settings: GradeSettings
    progress: Callable[[int], Any] | None = None
    target: Callable[..., None] = grader_process
    """What each grader process runs (the protocol of :func:`grader_process`)."""
    graders: list[Grader] = field(default_factory=list)
    waiting: deque[int] = field(default_factory=deque)
    deaths: dict[int, list[str]] = field(default_factory=dict)
    finished: set[int] = field(default_factory=set)
    lost: dict[Path, str] = field(default_factory=dict)
    halt: str | None = None
    """Why no more work is handed out (the disk is full): the rest is listed as lost."""

    def __post_init__(self) -> None:
        self.context = multiprocessing.get_context("spawn")
        self.results = self.context.Queue()
        self.waiting.extend(range(len(self.todo)))

    def start_grader(self) -> None:
        tasks = self.context.Queue()
        number = len(self.graders)
        # Not daemonic: a grader starts worker processes, which daemons may not do.
        process = self.context.Process(
            target=self.target, args=(number, tasks, self.results, self.settings)
        )
        process.start()
        grader = Grader(number, process, tasks)
        self.graders.append(grader)
        self.hand_out(grader)

    def hand_out(self, grader: Grader) -> None:
        grader.index, grader.started = None, None
        if self.halt is None and self.waiting:
            index = self.waiting.popleft()
            submission = self.todo[index]
            target = str(result_path(self.out, submission))
            grader.tasks.put((index, asdict(submission), target))
            grader.index, grader.assigned = index, time.monotonic()
        else:
            grader.tasks.put(None)

    def finish(self, index: int, lost: str | None = None) -> None:
        if index in self.finished:
            return
        self.finished.add(index)
        if lost is not None:
            self.lost[result_path(self.out, self.todo[index])] = lost
        elif self.progress:
            self.progress(1)

    def record(self, index: int, record: dict[str, Any]) -> None:
        """Write a result the supervisor decided (a timeout, a grader that kept dying)."""
        submission = self.todo[index]
        outcome, detail = deliver(identified(record, submission), result_path(self.out, submission))
        if outcome == "lost":
            self.halt = self.halt or detail
        self.finish(index, detail if outcome == "lost" else None)

    def on_message(self, message: tuple[str, int, int, str]) -> None:
        kind, number, index, detail = message
        grader = self.graders[number]
        if grader.index != index:
            return  # a late message from a grader that was already stopped
        if kind == "start":
            grader.started = time.monotonic()
            return
        if kind == "lost":
            self.halt = self.halt or detail
        self.finish(index, detail if kind == "lost" else None)
        self.hand_out(grader)

    def check(self, grader: Grader) -> None:
        """Stop a grader that overran its submission's budget, or that never started on it;
        replace one that died."""
        index = grader.index
        if index is None:
            return
        now = time.monotonic()
        if grader.started is not None and now - grader.started > overrun_limit(self.settings):
            stop(grader.process)
            reason = (
                f"timeout: grading used up the submission's {self.settings.budget:g} s budget "
                "(reading the notebook included) and was stopped"
            )
            self.record(index, error_record(self.todo[index], reason, TIMEOUT))
        elif grader.started is None and now - grader.assigned > STARTUP_LIMIT:
            stop(grader.process)
            self.retry_or_blame(index, f"did not start grading within {STARTUP_LIMIT:g} s")
        elif grader.process.is_alive():
            return
        elif already_graded(self.out, self.todo[index]):
            self.finish(index)  # it wrote the result, then died before saying so
        else:
            self.retry_or_blame(index, describe_grader_exit(grader.process.exitcode))
        grader.index = None
        self.start_grader()

    def retry_or_blame(self, index: int, what: str) -> None:
        """The grader failed on ``index`` (``what`` it did): retry once, then record it as
        the grader's fault."""
        cause = f"the grader process {what}"
        self.deaths.setdefault(index, []).append(cause)
        if len(self.deaths[index]) < 2:
            self.waiting.appendleft(index)
            return
        reason = (
            f"{cause} twice while grading this submission: a fault of the grader, not "
            "of the submission. Run the same command again to retry it"
        )
        self.record(index, error_record(self.todo[index], reason, fault="grader"))

    def run(self, jobs: int) -> RunOutcome:
        for _ in range(max(1, min(jobs, len(self.todo)))):
            self.start_grader()
        try:
            checked = time.monotonic()
            while len(self.finished) < len(self.todo):
                with contextlib.suppress(queue.Empty):
                    self.on_message(self.results.get(timeout=CHECK_EVERY))
                if time.monotonic() - checked < CHECK_EVERY:
                    continue  # a busy queue must not postpone the checks for long
                checked = time.monotonic()
                for grader in list(self.graders):
                    self.check(grader)
                if not any(g.index is not None for g in self.graders):
                    break  # halted: nothing is in flight, and nothing more is handed out
        except KeyboardInterrupt:
            for grader in self.graders:
                stop(grader.process)
            return RunOutcome(self.graded(), True, self.lost)
        for index in self.waiting:
            why = f"not graded: the run stopped handing out work because {self.halt}"
            self.lost[result_path(self.out, self.todo[index])] = why
        for grader in self.graders:
            if grader.process.is_alive():
                with contextlib.suppress(OSError, ValueError):
                    grader.tasks.put(None)
            grader.process.join(timeout=30)
        return RunOutcome(self.graded(), False, self.lost)

    def graded(self) -> int:
        return len(self.finished) - len(self.lost)


def stop(process: Any) -> None:
    """Stop a grader: SIGTERM first, so that it kills its sandboxed worker, then SIGKILL."""
    if process.is_alive():
        process.terminate()
        process.join(timeout=10)
    if process.is_alive():
        process.kill()
        process.join(timeout=10)


def grade_all(
    todo: list[Submission],
    out: Path,
    settings: GradeSettings,
    jobs: int,
    progress: Callable[[int], Any] | None = None,
    grader: Callable[..., None] = grader_process,
) -> RunOutcome:
    """Grade ``todo`` (see :func:`pending`) with ``jobs`` supervised grader processes."""
    if not todo:
        return RunOutcome(0, False, {})
    return Supervisor(todo, out, settings, progress, grader).run(jobs)


# -- the gradebook files ---------------------------------------------------------------------


def public_record(record: dict[str, Any]) -> dict[str, Any]:
    """A result without what changes from run to run (timings, sandbox details), without
    the feedback report's bulky data, and without the grader's own bookkeeping."""
    return {k: v for k, v in record.items() if k not in ("run", "heatmap", "fault")}


def read_result(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return public_record(record) if isinstance(record, dict) else None


def collect(out: Path, submissions: list[Submission] | None = None) -> list[dict[str, Any]]:
    """The results of ``submissions`` (those that have one), or of everything in OUT."""
    if submissions is None:
        paths = sorted((out / "results").glob("*/*.json"))
    else:
        paths = [result_path(out, s) for s in submissions]
    records = [r for r in map(read_result, paths) if r is not None]
    records.sort(key=lambda r: (r["student"], r["assignment"] or "", r["source"]))
    return records


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value a spreadsheet shows as text: OWASP's rule against CSV injection prefixes a
    cell that starts like a formula with a quote (the writer also quotes every text cell)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def write_gradebook(out: Path, submissions: list[Submission] | None = None) -> list[dict[str, Any]]:
    """Write ``grades.json`` and ``grades.csv`` together (see :func:`write_atomic_files`)
    from the results of ``submissions`` (default: every result in OUT)."""
    records = collect(out, submissions)
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
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow(["student", "assignment", "status", "score", "max_score", "error"])
    for r in records:
        row = [r["student"], r["assignment"] or "", r["status"], r["score"], r["max_score"]]
        writer.writerow([csv_cell(v) for v in [*row, r["error"] or ""]])
    write_atomic_files(
        {
            out / "grades.json": json.dumps(document, indent=1, sort_keys=True) + "\n",
            out / "grades.csv": buffer.getvalue(),
        }
    )
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
