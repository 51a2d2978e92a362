"""Run the visible checks of one exercise and classify each outcome."""

from __future__ import annotations

import importlib
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from ..adapters import MissingDefinition
from ..assignments import ASSIGNMENTS
from ..compare import CheckFailed
from ..diagnosis import RecordingImplementation, diagnose_by_fingerprint, fix_helpers_first
from ..implementation import Implementation
from ..outcome import (
    ERROR,
    FAILED,
    FAILING,
    FORBIDDEN,
    MISSING,
    NOT_IMPLEMENTED,
    PASSED,
    TIMEOUT,
    Outcome,
)
from ..probe import Probe
from .registry import REGISTRY, VisibleCheck


class CheckTimeout(Exception):
    """A check ran past its limit: ``cpu`` is the CPU time the process spent in it, ``wall``
    the time that passed."""

    def __init__(self, cpu: float, wall: float, computing: bool) -> None:
        super().__init__(f"{cpu:.1f} s of CPU in {wall:.1f} s")
        self.cpu, self.wall = cpu, wall
        self.computing = computing
        """Whether it ran out of CPU time (it computed all along), not out of waiting."""


def visible_checks(slug: str, exercise: str) -> list[VisibleCheck]:
    # Only this lesson's checks are loaded (they register themselves): lesson 1's need
    # NumPy alone, and the shell check of a NumPy lesson never imports PyTorch.
    importlib.import_module(f"{__package__}.lesson_{slug[:2]}")
    return REGISTRY.get((slug, exercise), [])


WAITING_FACTOR = 6
WAITING_AT_LEAST = 60.0
"""A check that waits (sleeps, reads input) instead of computing is stopped once this many
times its CPU limit, and at least this many seconds, have passed on the clock: long enough
that on a loaded machine a loop runs into its CPU limit first."""


def cpu_threads() -> int:
    """The threads PyTorch computes with, when it is loaded: their CPU time all counts."""
    import sys

    torch = sys.modules.get("torch")
    try:
        return max(1, int(torch.get_num_threads())) if torch is not None else 1
    except Exception:
        return 1


@contextmanager
def time_limit(seconds: float | None, waiting: float | None = None) -> Iterator[None]:
    """Interrupt a check that spends more than ``seconds`` of CPU time (per thread it
    computes with), or that has waited ``waiting`` seconds on the clock (by default
    :data:`WAITING_FACTOR` times ``seconds``, at least :data:`WAITING_AT_LEAST`; main thread,
    POSIX only). CPU time, not the clock: on a machine busy with other programs, a check
    waits for the CPU without spending any, and is never stopped for it."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return
    started, cpu_started = time.monotonic(), time.process_time()

    ran_out = []  # the CPU limit was reached (its signal may come back while importing)

    def expire(signum: int, frame: Any) -> None:
        if signum == signal.SIGPROF:
            ran_out.append(True)
        if importing(frame):
            # Never stopped halfway through an import (it would leave a half-made module for
            # every later check): asked again when the import is done.
            signal.setitimer(signal.ITIMER_REAL, IMPORT_GRACE)
            return
        cpu, wall = time.process_time() - cpu_started, time.monotonic() - started
        raise CheckTimeout(cpu, wall, computing=bool(ran_out))

    previous = (signal.getsignal(signal.SIGPROF), signal.getsignal(signal.SIGALRM))
    signal.signal(signal.SIGPROF, expire)
    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds * cpu_threads())
    if waiting is None:
        waiting = max(seconds * WAITING_FACTOR, WAITING_AT_LEAST)
    signal.setitimer(signal.ITIMER_REAL, waiting)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, previous[0])
        signal.signal(signal.SIGALRM, previous[1])


IMPORT_GRACE = 0.05
"""Seconds after which a check stopped while importing is asked again."""


def importing(frame: Any) -> bool:
    """Whether ``frame`` runs inside an import (Python's import machinery is on its stack)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def timed_run(check: VisibleCheck, probe: Probe, seconds: float | None) -> None:
    """Run one check under its limit. A first run that runs out may have paid for imports
    (the first call of an operation loads code): it is run once more before it counts."""
    for attempt in (1, 2):
        try:
            with time_limit(seconds):
                check.function(probe)
            return
        except CheckTimeout:
            if attempt == 2:
                raise


def timeout_outcome(exercise: str, check: VisibleCheck, stopped: CheckTimeout) -> Outcome:
    """What a stopped check says: a loop when it computed all along; waiting, when it did
    not (never a loop for a machine busy with other programs)."""
    if stopped.computing:
        message = f"still computing after {stopped.cpu:.1f} s of CPU time"
        hint = "Look for a loop that never ends."
    else:
        message = (
            f"still running after {stopped.wall:.0f} s, having used only {stopped.cpu:.1f} s "
            "of the CPU: it is waiting for something"
        )
        hint = "Look for a sleep, an input() or a lock that never returns."
    return Outcome(exercise, check.description, TIMEOUT, message, hint)


ERROR_HINTS = (
    (
        (
            "cannot be multiplied",
            "size of tensor a",
            "matmul: Input operand",
            "shapes",
            "size mismatch",
        ),
        "The shapes inside your code do not line up. Print the shape of each intermediate "
        "and compare it with the shapes the docstring gives.",
    ),
    (
        ("expected scalar type", "dtype", "expected m1 and m2 to have the same dtype"),
        "Two tensors have different dtypes. Print the dtype of each intermediate: which one "
        "is not the input's?",
    ),
    (
        ("inplace operation", "in-place"),
        "An operation that changes a tensor in place broke autograd. Find the in-place call "
        "(its name ends with an underscore, or it assigns into a slice).",
    ),
)
"""Hints for an error, by words in its message: each says what the error means and how to
find the cause, never a fix the error alone cannot vouch for (a named mistake does that)."""


def describe_error(exc: BaseException) -> tuple[str, str | None]:
    text = f"{type(exc).__name__}: {exc}".strip()
    if len(text) > 300:
        text = text[:297] + "..."
    for needles, hint in ERROR_HINTS:
        if any(n in str(exc) for n in needles):
            return text, hint
    return text, None


def run_exercise(
    impl: Implementation, slug: str, exercise_name: str, timeout_s: float | None = 10.0
) -> list[Outcome]:
    """Run every visible check of one exercise, and name the classic mistake if one matches.

    When the exercise fails and a helper it calls fails its own checks too, the first
    failure says to fix the helper first, and no mistake is named: the catalogue's
    mistakes are built on correct helpers, so they cannot explain this exercise.
    """
    recorder = RecordingImplementation(impl)
    results = check_exercise(recorder, slug, exercise_name, timeout_s)
    if not failing_indices(results):
        return results
    helpers = [
        helper
        for helper in ASSIGNMENTS[slug].exercise(exercise_name).uses
        if any(r.status != PASSED for r in check_exercise(impl, slug, helper, timeout_s))
    ]
    if helpers:
        first = failing_indices(results)[0]
        results[first] = replace(results[first], hint=fix_helpers_first(exercise_name, helpers))
        return results
    return with_diagnosis(results, slug, exercise_name, recorder)


def failing_indices(results: list[Outcome]) -> list[int]:
    return [i for i, r in enumerate(results) if r.status in FAILING]


def check_exercise(
    impl: Implementation, slug: str, exercise_name: str, timeout_s: float | None = 10.0
) -> list[Outcome]:
    """Run every visible check of one exercise; stop early if it is not there at all."""
    assignment = ASSIGNMENTS[slug]
    probe = Probe(impl, assignment.exercise(exercise_name), assignment.framework)
    results: list[Outcome] = []
    for check in visible_checks(slug, exercise_name):
        try:
            timed_run(check, probe, timeout_s)
        except NotImplementedError:
            return [Outcome(exercise_name, "implemented", NOT_IMPLEMENTED, "not implemented yet")]
        except MissingDefinition as exc:
            return [
                Outcome(
                    exercise_name,
                    "defined",
                    MISSING,
                    f"{exc}: run the cell that defines it, and keep its name",
                )
            ]
        except CheckFailed as exc:
            status = FORBIDDEN if exc.stage == "forbidden" else FAILED
            results.append(Outcome(exercise_name, check.description, status, exc.message, exc.hint))
        except CheckTimeout as stopped:
            results.append(timeout_outcome(exercise_name, check, stopped))
        except (Exception, SystemExit) as exc:
            message, hint = describe_error(exc)
            results.append(Outcome(exercise_name, check.description, ERROR, message, hint))
        else:
            results.append(Outcome(exercise_name, check.description, PASSED))
    return results


def with_diagnosis(
    results: list[Outcome],
    slug: str,
    exercise_name: str,
    recorder: RecordingImplementation,
) -> list[Outcome]:
    """Attach the matching classic mistake to the first failing check, if there is one."""
    failing = failing_indices(results)
    if not failing:
        return results
    mistake = diagnose_by_fingerprint(slug, exercise_name, recorder.calls.get(exercise_name, []))
    if mistake is None:
        return results
    first = failing[0]
    results[first] = replace(
        results[first], diagnosis=mistake.title, hint=mistake.hint, mistake=mistake.id
    )
    return results
