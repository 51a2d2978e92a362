"""Grading one submission, as a pipeline of one-job steps.

read the notebook → run its cells in the sandbox → the hidden tests → refuse what the
grader itself got wrong → score → diagnose → the result record.

Each step takes the :class:`Grading` the steps before it filled in. A step that finds the
submission cannot be graded raises :class:`Ungradable`, the pipeline's one exit for that
case, which :func:`grade_submission` turns into an error record. :func:`grade_safely` is
what a grader process calls: the pipeline, retried once when the grader fails or a worker
is killed from outside the sandbox.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from attnkit.assignments import ASSIGNMENTS
from attnkit.diagnosis import RecordingImplementation
from attnkit.notebook_code import Cell, NotebookError, read_cells
from attnkit.outcome import INTERNAL, PASSED, Outcome

from ..lessons import memory_bound
from ..lessons.rubric import cell_text, graded_cells, released_graded_sources
from ..sandbox.errors import WorkerCrashed, WorkerTimeout
from ..sandbox.isolation import IsolatedSubmission
from ..sandbox.layout import SandboxSettings
from ..sandbox.zygote import find_verdict, level_of
from .explain import explain_failures, lead_with_cell_errors, one_cause_for_timeouts, static_notes
from .harness import reference_implementation, run_suite
from .kernels import reached, suspect_notes
from .options import GradeOptions
from .per_student import inputs_of
from .records import CellEntry, ResultRecord, error_record, identified
from .scoring import better_of, score_cells
from .shared_cells import zygote_cells
from .submission import Refused, Submission, read_submission_file, sha256_file, text_id
from .withholding import WithholdingSubmission

SHARED_WHY = (
    "released cells, unchanged, that call none of the submission's code: computed once by "
    "the sandbox, and handed over only while every module, function and default they read "
    "was still the one they were computed with"
)


@dataclass(frozen=True)
class GradeSettings:
    """How one submission is graded: the run's options, and what the run adds to them."""

    options: GradeOptions = field(default_factory=GradeOptions)
    course_secret: Any = None
    """--seed-per-student's course secret (a :class:`~.per_student.CourseSecret`, which
    never prints): each student's hidden tests then draw inputs of their own."""
    plots: bool = True
    """Whether each sandbox loads matplotlib before forking its workers (0.3 to 0.5 s of its
    start-up; every worker then plots without loading it). ``attnkit grade`` turns it off
    when no submission names matplotlib: a worker that plots anyway loads it itself, as a
    kernel would. Never part of a result: it changes how fast, not what."""
    overrun_grace: float = 15.0
    """Seconds beyond the budget a grader may spend on one submission before it is stopped."""
    stamp: str = ""
    """What the results are graded with (the grading packages and the options that decide a
    result, :func:`attnkit_autograder.classes.run_manifest.stamp`), written into every result: a
    result with another stamp is not current, and is graded again."""

    @property
    def budget(self) -> float:
        return self.options.budget

    def sandbox_settings(self) -> SandboxSettings:
        return SandboxSettings(
            enabled=self.options.sandbox,
            user=self.options.sandbox_user,
            verdict=find_verdict(),
            plots=self.plots,
        )


class Ungradable(Exception):
    """The submission cannot be graded: the pipeline's one exit for that case.

    ``fault`` is ``"submission"`` (the student's file) or ``"grader"`` (the kit itself, which a
    rerun grades again)."""

    def __init__(self, reason: str, fault: str = "submission") -> None:
        super().__init__(reason)
        self.reason = reason
        self.fault = fault


@dataclass
class Grading:
    """One submission's grading: what each step of the pipeline hands to the next."""

    submission: Submission
    settings: GradeSettings
    started: float = field(default_factory=time.monotonic)
    cells: list[Cell] = field(default_factory=list)
    verdicts: list[Outcome] = field(default_factory=list)
    tests: list[CellEntry] = field(default_factory=list)
    calls: dict[str, list] = field(default_factory=dict)
    """Every call the hidden tests made to each exercise, with its answer (for diagnosis)."""
    cell_failures: dict[int, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    sandbox_failure: str | None = None
    """Why the sandbox failed the grader, if it did (never the submission's doing)."""
    heatmap: Any = None
    run: dict[str, Any] = field(default_factory=dict)
    """How the sandbox ran: workers started, its bubblewrap, workers killed from outside."""
    phases: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.clock = self.started

    @property
    def slug(self) -> str:
        return self.submission.assignment or ""

    def lap(self, phase: str) -> None:
        """Charge the time since the last lap to ``phase``."""
        now = time.monotonic()
        self.phases[phase] = self.phases.get(phase, 0.0) + now - self.clock
        self.clock = now


# -- the steps --------------------------------------------------------------------------------


def read_notebook(grading: Grading) -> None:
    """The submission's code cells, read under its budget (the clock has started); never
    through a link, never past the size limit (see discovery)."""
    submission = grading.submission
    if submission.problem:
        raise Ungradable(submission.problem)
    if grading.slug not in ASSIGNMENTS:
        raise Ungradable(f"unknown assignment {grading.slug!r}")
    try:
        cells = read_cells(submission.path, read_submission_file(submission.path))
    except (Refused, NotebookError) as exc:
        raise Ungradable(str(exc)) from None
    if not any(
        line.strip() and not line.lstrip().startswith("#")
        for cell in cells
        for line in cell.source.splitlines()
    ):
        raise Ungradable(f"{submission.path}: defines nothing (no code to grade)")
    grading.cells = placed_graded_cells(cells, grading.slug)
    grading.lap("reading")


def placed_graded_cells(cells: list[Cell], slug: str) -> list[Cell]:
    """The cells, each graded cell knowing its grade id even where the student's editor
    dropped nbgrader's metadata (Colab, VS Code, a ``.py`` export): a cell whose code is a
    released graded cell's is that cell (the last such one, if the student copied it). The
    id only says where the state the student saw is remembered (a second grading that can
    only add points), never what is graded."""
    known = {cell.grade_id for cell in cells if cell.grade_id}
    sources = released_graded_sources(slug)
    last: dict[str, int] = {}
    for position, cell in enumerate(cells):
        grade_id = sources.get(cell_text(cell.source)) if not cell.grade_id else None
        if grade_id and grade_id not in known:
            last[grade_id] = position
    placed = list(cells)
    for grade_id, position in last.items():
        placed[position] = dataclasses.replace(cells[position], grade_id=grade_id)
    return placed


def open_sandbox(grading: Grading) -> WithholdingSubmission:
    """The submission's sandboxed workers, with what is left of its budget: each exercise is
    answered where the library kernels it must not use are withheld (see withholding)."""
    settings = grading.settings
    budget = max(settings.budget - (time.monotonic() - grading.started), 0.0)

    limits = settings.options.limits(budget)
    bound = memory_bound(grading.slug)
    if bound is not None:  # the lesson's own bound, never more than the option allows
        limits = dataclasses.replace(limits, memory_bytes=min(limits.memory_bytes, bound))

    def open_worker(profile: str | None, primary: IsolatedSubmission | None) -> Any:
        worker = IsolatedSubmission(
            grading.cells,
            limits,
            sandbox=settings.sandbox_settings(),
            watch=tuple(e.name for e in ASSIGNMENTS[grading.slug].exercises),
            label=grading.submission.key,
            shared=zygote_cells(grading.slug),
            withhold=profile,
            # A later worker ends when the first one's hidden tests must: one budget.
            until=primary.clock.deadline if primary is not None else None,
        )
        if primary is not None:  # what the first run had to stop is not paid for again,
            worker.history.inherit(primary.history)
            worker.timed_out = primary.timed_out  # nor a call that ran out of time (lent)
        return worker

    return WithholdingSubmission(open_worker, grading.slug)


def run_cells(grading: Grading, impl: WithholdingSubmission) -> None:
    """Jupyter's Run All, in the sandbox. A failure here is met again, per test, by the
    suite: it costs the exercises it breaks, not the whole submission."""
    with contextlib.suppress(WorkerTimeout, WorkerCrashed):
        impl.prepare()
    grading.lap("cells")


def run_hidden_tests(grading: Grading, impl: WithholdingSubmission, reference: Any) -> None:
    """The hidden suite against the graded definitions (the last ones bound), recording every
    call for diagnosis."""
    recorder = RecordingImplementation(impl)
    grading.verdicts = run_suite(recorder, grading.slug, reference)
    grading.calls = recorder.calls
    grading.lap("hidden tests")


def regrade_live_definitions(grading: Grading, impl: WithholdingSubmission, reference: Any) -> None:
    """Where a failing graded cell's exercise was redefined further down, also grade the
    definition live at that graded cell; the better of the two counts (see
    attnkit.notebook_code)."""
    failing = {v.grade_id for v in grading.verdicts if v.status != PASSED}
    if failing:
        failing &= impl.redefined_at() & {c.grade_id for c in graded_cells(grading.slug)}
    for grade_id in sorted(failing):
        again = run_suite(impl.with_variant(grade_id), grading.slug, reference, {grade_id})
        impl.with_variant(None)
        grading.verdicts = better_of(grading.verdicts, again)
    grading.lap("definitions live at graded cells")


def collect_heatmaps(grading: Grading, impl: WithholdingSubmission, reference: Any) -> None:
    """What the feedback report draws, read off the submission's own outputs (--feedback)."""
    if not grading.settings.options.feedback:
        return
    from .heatmaps import collect_heatmap

    grading.heatmap = collect_heatmap(grading.slug, impl, reference)
    grading.lap("heatmaps")


def run_in_sandbox(grading: Grading) -> None:
    """Every step that needs the submission's workers, then the sandbox's reset, whatever
    happened (the next submission starts from the same state)."""
    impl = open_sandbox(grading)
    reference = reference_implementation(grading.slug)
    student, draws = grading.submission.student, None
    try:
        run_cells(grading, impl)
        with inputs_of(grading.settings.course_secret, grading.slug, student, reference) as d:
            run_hidden_tests(grading, impl, reference)
            regrade_live_definitions(grading, impl, reference)
        draws = d
        collect_heatmaps(grading, impl, reference)
    finally:
        impl.close()
        grading.lap("sandbox reset")
    history = impl.history
    grading.cell_failures = history.failures
    grading.notes = history.notes
    grading.sandbox_failure = impl.failed
    grading.run = {
        "workers_started": impl.spawned,
        "sandbox": impl.sandbox,
        "memory": impl.memory(),
        "cell_seconds": {str(index): seconds for index, seconds in history.seconds.items()},
    }
    if history.shared:
        grading.run["shared_cells"] = {"cells": history.shared, "why": SHARED_WHY}
    if grading.settings.course_secret is not None:  # the secret's digest, never the secret
        grading.run["per_student_inputs"] = grading.settings.course_secret.digest
        if draws is not None:  # which inputs this student's tests drew, as one digest
            grading.run["inputs_drawn"] = {"seeds": draws.count, "digest": draws.digest()}


def refuse_grader_faults(grading: Grading) -> None:
    """A test that fails for the reference too (see harness.attribute_fault) is a bug in the
    kit, not the student's doing: refuse to score rather than give a 0; a rerun retries. So
    is a sandbox that could not start or lend a worker."""
    if grading.sandbox_failure:
        raise Ungradable(grading.sandbox_failure, fault="grader")
    internal = [v for v in grading.verdicts if v.status == INTERNAL]
    if internal:
        raise Ungradable(internal[0].message, fault="grader")


def score(grading: Grading) -> None:
    """Points per graded cell (see :func:`scoring.score_cells`)."""
    partial = grading.settings.options.partial_credit
    grading.tests = score_cells(grading.slug, grading.verdicts, partial)


def diagnose(grading: Grading) -> None:
    """Name the classic mistakes, then let a cell's own error lead where it is the cause."""
    explain_failures(grading.slug, grading.tests, grading.calls)
    lead_with_cell_errors(grading.tests, grading.cells, grading.cell_failures)
    one_cause_for_timeouts(grading.slug, grading.tests)
    grading.lap("diagnosis")


def graded_record(grading: Grading) -> ResultRecord:
    """The result of a graded submission (one row of grades.json, plus the run's details)."""
    submission, tests = grading.submission, grading.tests
    kernels = reached(grading.calls)
    return {
        "student": submission.student,
        "assignment": grading.slug,
        "source": text_id(str(submission.path)),
        "source_sha256": sha256_file(submission.path),
        "status": "graded",
        "error": None,
        "score": sum(t["points"] for t in tests),
        "max_score": sum(t["max_points"] for t in tests),
        "tests": tests,
        "notes": grading.notes
        + static_notes(grading.slug, grading.cells, grading.cell_failures)
        + suspect_notes(grading.slug, kernels),
        "sandbox": level_of(grading.settings.sandbox_settings()),
        "heatmap": grading.heatmap,
        "run": {
            "seconds": round(time.monotonic() - grading.started, 3),
            "phases": {k: round(v, 3) for k, v in grading.phases.items()},
            **grading.run,
            "kernels": kernels,
        },
    }


def grade_submission(submission: Submission, settings: GradeSettings) -> ResultRecord:
    """Grade one submission; never raises for anything the submission does.

    The submission's cells run in order in the sandbox (Jupyter's Run All), then the hidden
    suite calls its exercises there; the verdicts become points, and failures get their
    explanation. A submission that cannot be graded leaves by :class:`Ungradable`.
    """
    grading = Grading(submission, settings)
    try:
        read_notebook(grading)
        run_in_sandbox(grading)
        refuse_grader_faults(grading)
    except Ungradable as exc:
        return error_record(submission, exc.reason, fault=exc.fault)
    score(grading)
    diagnose(grading)
    return graded_record(grading)


# -- retries ----------------------------------------------------------------------------------


def worker_killed(record: ResultRecord) -> list[str]:
    """Sandboxed workers of this grading that were killed from outside the sandbox (the OOM
    killer, an administrator), as the zygote reported when it reaped them: not by the
    grader's reset, not by the worker's own CPU limit, and a worker cannot SIGKILL itself.
    Never what the worker said about itself."""
    sandbox = record.get("run", {}).get("sandbox", {})
    killed = sandbox.get("killed_from_outside") if isinstance(sandbox, dict) else None
    return list(killed) if isinstance(killed, list) else []


def grade_safely(submission: Submission, settings: GradeSettings) -> ResultRecord:
    """grade_submission, retried once if the grader itself fails or a worker is killed from
    outside. A second failure of the grader is recorded as the grader's error
    (``fault: "grader"``), never as the student's; a second kill keeps its verdicts."""
    from ..sandbox.zygote import ensure_sandbox

    failures = []
    for attempt in range(2):
        if attempt == 1:
            with contextlib.suppress(Exception):  # grade_submission reports a sandbox failure
                ensure_sandbox(settings.sandbox_settings())
        try:
            record = grade_submission(submission, settings)
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
