"""Grade many submissions in parallel, and make sure each ends with a result.

Each submission is graded by one of N grader processes (one per core by default); a grader
runs the pipeline (:mod:`.pipeline`) and writes the result file (:mod:`.results`) before it
takes the next submission. The main process supervises the graders: one that overruns the
submission's budget is stopped and the submission gets a ``timeout`` record; one that dies
is replaced and its submission retried once, then recorded as the grader's error (retried
again on the next run). Runs on different OUTs each have their own sandboxes, which cannot
see each other (see attnkit_autograder.sandbox.zygote).
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple

from attnkit.assignments import ASSIGNMENTS
from attnkit.outcome import TIMEOUT

from ..grading.pipeline import GradeSettings, grade_safely
from ..grading.records import ResultRecord, error_record, identified
from ..grading.submission import Submission
from .grader_server import grader_context
from .results import already_graded, deliver, result_path

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
    from ..grading.harness import reference_failures, reference_implementation

    with contextlib.suppress(Exception):
        reference_failures(slug, reference_implementation(slug))


def one_thread() -> None:
    """The references compute on tiny tensors: PyTorch's thread pool only adds cost, and with
    one grader per core (``--jobs``) its spinning threads would fight the other graders."""
    import torch

    torch.set_num_threads(1)


def grader_process(number: int, tasks: Any, results: Any, settings: GradeSettings) -> None:
    """One grader: take submissions from its own ``tasks``, write their result files, and
    tell the supervisor when each starts and how it ended, with ``results.send(...)`` on the
    grader's own channel (the writing end of a pipe only this grader holds)."""
    parent = os.getppid()
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the main process decides when to stop
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        # Start the sandbox first, without waiting: it imports torch in its own process
        # while this one loads the references, so the two start-up costs overlap.
        from ..sandbox.zygote import shared_zygote

        shared_zygote(settings.sandbox_settings(), wait=False)
        one_thread()
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
                results.send(("start", number, index, ""))
                record = grade_safely(submission, settings)
                if _stopping:
                    return  # never record a submission whose grading was cut short
                outcome, detail = deliver(record, Path(target), settings.stamp)
                results.send((outcome, number, index, detail))
    except KeyboardInterrupt:
        return  # stopped by the supervisor (the worker was killed on the way out)


def overrun_limit(settings: GradeSettings) -> float:
    """Seconds a grader may spend on one submission, from its first byte, before it is
    stopped: the budget for the notebook's cells (twice, run by two workers) and again for
    the hidden tests, plus room for the grader's own work around the sandboxed calls."""
    # The cells may run in two workers (see withholding), then the hidden tests.
    return 3 * settings.budget + max(settings.overrun_grace, settings.budget / 2)


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
    channel: Any
    """The reading end of the pipe only this grader writes to: a grader killed halfway
    through a message (SIGKILL, the OOM killer) can tear only its own channel. One queue
    shared by all graders would be left locked, or its stream torn, for every other grader,
    and the run would wait for messages that never come."""
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
        # Graders are forked from one server that has loaded what every grader needs
        # (PyTorch, the pipeline): paid once for the run instead of once per grader, and
        # those pages are shared. The server is a fresh process, not this one: nothing of
        # the coordinating process (its threads, its open files) reaches a grader.
        self.context = grader_context()
        self.waiting.extend(range(len(self.todo)))

    def start_grader(self) -> None:
        tasks = self.context.Queue()
        number = len(self.graders)
        channel, writer = self.context.Pipe(duplex=False)
        # Not daemonic: a grader starts worker processes, which daemons may not do.
        process = self.context.Process(
            target=self.target, args=(number, tasks, writer, self.settings)
        )
        process.start()
        writer.close()  # the grader holds the only writing end: its death is our EOF
        grader = Grader(number, process, tasks, channel)
        self.graders.append(grader)
        self.hand_out(grader)

    def messages(self, timeout: float) -> list[tuple[str, int, int, str]]:
        """The messages that arrive within ``timeout`` on the live graders' channels. A
        channel that ends or carries something that is not a message is closed: its
        grader is then judged by :meth:`check` (dead, or silent past its limits)."""
        open_channels = [g.channel for g in self.graders if not g.channel.closed]
        if not open_channels:
            time.sleep(timeout)
            return []
        got = []
        ready = multiprocessing.connection.wait(open_channels, timeout)
        for channel in (c for c in ready if isinstance(c, Connection)):
            try:
                message = channel.recv()
                kind, number, index, detail = message
                if self.graders[number].channel is not channel:
                    raise ValueError("a message about another grader")
                got.append((str(kind), number, index, str(detail)))
            except Exception:  # EOF, a torn or foreign frame: this grader is heard no more
                channel.close()
        return got

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

    def record(self, index: int, record: ResultRecord) -> None:
        """Write a result the supervisor decided (a timeout, a grader that kept dying)."""
        submission = self.todo[index]
        outcome, detail = deliver(
            identified(record, submission), result_path(self.out, submission), self.settings.stamp
        )
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
        elif grader.process.is_alive() and not grader.channel.closed:
            return
        elif already_graded(self.out, self.todo[index], stamp=self.settings.stamp):
            stop(grader.process)
            self.finish(index)  # it wrote the result, then died before saying so
        elif grader.process.is_alive():
            stop(grader.process)
            self.retry_or_blame(index, "stopped speaking the grader's protocol")
        else:
            self.retry_or_blame(index, describe_grader_exit(grader.process.exitcode))
        grader.channel.close()
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
                for message in self.messages(CHECK_EVERY):
                    self.on_message(message)
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
