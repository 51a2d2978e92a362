"""Run the visible checks of one exercise and classify each outcome."""

from __future__ import annotations

import importlib
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

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
    pass


def visible_checks(slug: str, exercise: str) -> list[VisibleCheck]:
    # Only this lesson's checks are loaded (they register themselves): lesson 1's need
    # NumPy alone, and the shell check of a NumPy lesson never imports PyTorch.
    importlib.import_module(f"{__package__}.lesson_{slug[:2]}")
    return REGISTRY.get((slug, exercise), [])


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Interrupt a check that runs longer than ``seconds`` (main thread, POSIX only)."""
    usable = (
        seconds is not None
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise CheckTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


ERROR_HINTS = (
    (
        (
            "cannot be multiplied",
            "size of tensor a",
            "matmul: Input operand",
            "shapes",
            "size mismatch",
        ),
        "The shapes inside your code do not line up. Print the shape of each intermediate; "
        "to swap the token and feature axes of a batched tensor use transpose(-2, -1), not .T.",
    ),
    (
        ("expected scalar type", "dtype", "expected m1 and m2 to have the same dtype"),
        "Two tensors have different dtypes. Keep the dtype of the input (e.g. torch.ones_like).",
    ),
    (
        ("inplace operation", "in-place"),
        "An in-place operation broke autograd. Use out-of-place versions (masked_fill, not "
        "masked_fill_).",
    ),
)


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
            with time_limit(timeout_s):
                check.function(probe)
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
        except CheckTimeout:
            results.append(
                Outcome(
                    exercise_name,
                    check.description,
                    TIMEOUT,
                    f"still running after {timeout_s:g} s",
                    "Look for a loop that never ends.",
                )
            )
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
