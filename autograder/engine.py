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
same OUT; grader slots (and so sandbox uids) are leased machine-wide, so concurrent runs
on different OUTs never share one.
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
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from attnkit.assignments import ASSIGNMENTS
from attnkit.diagnosis import RecordingImplementation, diagnose
from attnkit.errors import KitError
from attnkit.forbidden import scan_source
from attnkit.notebook_code import Definitions, NotebookError, extract_definitions, read_code_cells

from .discovery import MAX_SUBMISSION_BYTES, Refused, Submission, read_submission_file
from .harness import ERROR, FAILED, FORBIDDEN, INTERNAL, PASSED, TIMEOUT, TestVerdict, run_suite
from .rubric import GradedCell, graded_cells

SCHEMA = "attnkit-grades/1"
STATUS_ORDER = {PASSED: 0, FAILED: 1, ERROR: 2, TIMEOUT: 3, FORBIDDEN: 4}


@dataclass(frozen=True)
class GradeSettings:
    call_timeout: float = 10.0
    budget: float = 120.0
    memory_mb: int = 2048
    feedback: bool = False
    """Also collect what the feedback report shows (the attention heatmaps)."""
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
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
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
        "source": str(submission.path),
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


def explain_failures(slug: str, tests: list[dict[str, Any]], calls: dict[str, list]) -> None:
    """Name the classic mistake behind each failing exercise, and failures inherited from
    an earlier exercise the failing one calls. Passing cells are never annotated."""
    from attnkit_solutions.exercises import reference_namespace

    explained = (FAILED, ERROR, FORBIDDEN)
    failing = {t["exercise"] for t in tests if t["status"] in explained}
    base = reference_namespace(slug)
    found = {e: diagnose(slug, e, calls.get(e, []), base) for e in sorted(failing)}
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


def identified(record: dict[str, Any], submission: Submission) -> dict[str, Any]:
    """The record, with how the student was identified and what discovery noticed."""
    record["id_rule"] = submission.id_rule
    record["notes"] = [*submission.notes, *record.get("notes", [])]
    return record


def worker_killed(record: dict[str, Any]) -> bool:
    """A sandboxed worker died of SIGKILL during grading. The worker's own limits do not
    end it that way (memory fails allocations, a timeout is reported as such), so the
    likeliest cause is something outside the sandbox: the machine, or another process."""
    from .isolation import describe_exit

    killed = describe_exit(-signal.SIGKILL)
    return any(killed in str(test.get("message")) for test in record.get("tests", []))


def grade_safely(submission: Submission, settings: GradeSettings, slot: int) -> dict[str, Any]:
    """grade_submission, retried once if the grader itself fails or a worker is killed from
    outside. A second failure of the grader is recorded as the grader's error
    (``fault: "grader"``), never as the student's; a second kill keeps its verdicts."""
    failures = []
    for attempt in range(2):
        try:
            record = grade_submission(submission, settings, slot)
        except Exception as exc:  # a bug in the kit must not cost other students their grades
            failures.append(repr(exc))
            continue
        if attempt == 0 and worker_killed(record):
            continue
        if attempt == 1:  # kept out of grades.json, which must not depend on such accidents
            run = record.setdefault("run", {})
            run["regraded"] = failures[-1] if failures else "a sandboxed worker was killed"
        return identified(record, submission)
    reason = (
        f"the grader failed twice on this submission ({failures[-1][:300]}): a fault of the "
        "grader, not of the submission. Run the same command again to retry it"
    )
    return identified(error_record(submission, reason, fault="grader"), submission)


# -- many submissions, in parallel ----------------------------------------------------------------


_stopping = False
SLOT_FOLDER = Path(tempfile.gettempdir()) / f"attnkit-grader-slots-{os.geteuid()}"
MAX_SLOTS = 64
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


def lease_slot() -> tuple[int, IO[str]]:
    """A sandbox slot no other grader on this machine holds, whichever run it belongs to.

    The slot picks the sandbox's uid (when grading as root), and a slot's uid is swept of
    processes after every submission: two runs sharing one would kill each other's workers.
    The lease is an flock, so it ends with the process however it ends.
    """
    SLOT_FOLDER.mkdir(mode=0o700, exist_ok=True)
    for slot in range(MAX_SLOTS):
        handle = open(SLOT_FOLDER / f"{slot}.lock", "a")  # noqa: SIM115 (held for life)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        return slot, handle
    raise RuntimeError(f"all {MAX_SLOTS} grader slots in {SLOT_FOLDER} are taken")


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
    from .harness import reference_implementation

    reference = reference_implementation(slug)
    with contextlib.suppress(Exception):
        run_suite(reference, slug, reference)


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
        slot, _lease = lease_slot()
        # Start the zygote first: it imports torch in its own process while this one imports
        # the references, so the two start-up costs overlap instead of adding up.
        from .isolation import zygote

        zygote()
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
                results.put(("start", number, index, ""))
                record = grade_safely(submission, settings, slot)
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
    stopped: the budget, plus room for the grader's own work around the sandboxed calls."""
    return settings.budget + max(settings.overrun_grace, settings.budget / 2)


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
