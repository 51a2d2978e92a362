"""Name the classic mistake behind a failing exercise, only when the evidence singles it out.

The rule, shared by the grader and the self-check:

1. while the checks run, :class:`RecordingImplementation` records every call made to the
   exercise and what came back (the outputs, or the type of the exception raised);
2. every recorded call is answered three ways: by the submission (recorded), by the
   correct implementation, and by each program of each catalogued mistake;
3. a program *explains* the submission when it answers every call exactly as the
   submission did (values, dtype, shape and kind; for an exception, its type and its
   message), and on at
   least one call where the submission differs from the correct answer the
   answer singles the program out: a returned value, or an error with the very same
   message (which spells out the shapes involved). Raising the same exception type is
   consistent with a mistake but never evidence for it;
4. a mistake is named only when exactly one catalogued mistake explains the submission.
   A mistake whose evidence is ``forbidden`` (calling a library function the exercise
   asks you to write) is named only when a call actually ran a forbidden function. One
   whose evidence is ``memory`` (a whole score matrix built) explains a call that ran out
   of the memory the grader allows as well as one that answers as its program does: the
   program itself computes the right values wherever it runs with memory enough.

This module holds the rule and the *fingerprints*: the correct answers and every mistake
program's answers to the exercise's visible checks, whose inputs are fixed, shipped as
plain data (``mistake_fingerprints.bin``). The catalogue itself (each mistake as code) and
the grader's replay of it on the references belong to the instructor's side of the kit;
this package never holds either.

A diagnosis is only ever made for an exercise that failed, so a correct submission never
receives a mistake hint. Callers also skip an exercise whose helpers fail (see
:func:`failing_helpers`): its variants are built on correct helpers, so they could not
explain its output.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .adapters import ADAPTERS
from .implementation import (  # noqa: F401  (recording lives with the implementations)
    MESSAGE_CHARS,
    Answer,
    RecordedCall,
    RecordingImplementation,
    raised_message,
    raised_type,
    strip,
)

FINGERPRINTS = Path(__file__).resolve().parent / "mistake_fingerprints.bin"  # attnkit generate

VALUES, FORBIDDEN_CALL, MEMORY = "values", "forbidden", "memory"
"""What a mistake is named from: wrong values, runtime evidence of a forbidden call, or a
call that ran out of the memory it may hold (and values otherwise)."""


@dataclass(frozen=True)
class MistakeInfo:
    """What a classic mistake is called and how it shows, without how it is made."""

    assignment: str
    exercise: str
    id: str
    title: str
    symptom: str
    hint: str
    evidence: str = VALUES

    @property
    def key(self) -> str:
        return f"{self.assignment}/{self.exercise}/{self.id}"


Info = TypeVar("Info", bound=MistakeInfo)


# -- answers and evidence ---------------------------------------------------------------------


def agree(a: Answer, b: Answer) -> bool:
    """The same error (its type and its message: two errors of one type are not the same
    answer), or the same results: kind, dtype, shape and values."""
    if a.raised is not None or b.raised is not None:
        return a.raised == b.raised and a.message == b.message
    return same(strip(a.outcome), strip(b.outcome))


RTOL, ATOL = 1e-4, 1e-5
"""How close two floats must be to count as the same answer."""


def same(a: Any, b: Any) -> bool:
    """Deep equality for adapter results: float tolerance, NaN == NaN, dtypes and shapes exact."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind not in "fc":
            return bool(np.array_equal(a, b))
        return bool(np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def explains(
    submission: Sequence[Answer],
    correct: Sequence[Answer],
    program: Sequence[Answer],
    memory: bool = False,
) -> bool:
    """Whether a mistake program answers every call as the submission did, with at least
    one wrong answer that singles it out (see :meth:`Answer.singles_out`). Incidental
    differences in how a mistake is written are the catalogue's families' job. With
    ``memory`` (a mistake whose evidence is memory), a call that ran out of memory is
    explained by the program, and singles it out."""
    evidence = False
    for got, right, wrong in zip(submission, correct, program, strict=True):
        if memory and got.ran_out_of_memory:
            evidence = True
            continue
        if not agree(got, wrong):
            return False  # a student who is right where the mistake is wrong did not make it
        evidence = evidence or (not agree(got, right) and got.singles_out(wrong))
    return evidence


def single_out(
    candidates: Sequence[Info], submission: Sequence[Answer], explained: Callable[[Info], bool]
) -> Info | None:
    """The one mistake the evidence names, or None.

    ``explained(mistake)`` says whether some program of the mistake explains the
    submission. Runtime evidence of a forbidden call names the forbidden-call mistake
    (and only it); otherwise exactly one value mistake must explain the submission.
    """
    if any(answer.ran_forbidden for answer in submission):
        forbidden = [m for m in candidates if m.evidence == FORBIDDEN_CALL]
        return forbidden[0] if len(forbidden) == 1 else None
    found = [m for m in candidates if m.evidence in (VALUES, MEMORY) and explained(m)]
    return found[0] if len(found) == 1 else None


@contextmanager
def quiet() -> Iterator[None]:
    """Wrong variants overflow and divide by zero on purpose: keep that off the screen."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def replay(namespace: Mapping[str, Any], call: RecordedCall) -> Answer:
    try:
        with quiet():
            return Answer(ADAPTERS[call.adapter](namespace, **call.kwargs), None)
    except Exception as exc:
        return Answer(None, raised_type(exc), raised_message(exc))


def failing_helpers(slug: str, exercise: str, failing: set[str]) -> list[str]:
    """The exercises that ``exercise`` calls (directly) which fail their own checks."""
    from .assignments import ASSIGNMENTS

    return sorted(set(ASSIGNMENTS[slug].exercise(exercise).uses) & failing)


def fix_helpers_first(exercise: str, helpers: Sequence[str]) -> str:
    """The hint for an exercise that fails because helpers it calls fail."""
    names = " and ".join(f"`{h}`" for h in helpers)
    fails = "fails its" if len(helpers) == 1 else "fail their"
    return (
        f"{exercise} calls your {names}, which {fails} own checks: fix {names} first, "
        "then run this again."
    )


# -- fingerprints: diagnosis without the catalogue's code -------------------------------------


@dataclass(frozen=True)
class Fingerprint(MistakeInfo):
    """A mistake's metadata and each program's answers to the visible checks (no code)."""

    programs: tuple[dict[str, dict[str, Any]], ...] = ()
    """Per program of the family: call key -> answer."""


@dataclass(frozen=True)
class Fingerprints:
    """The correct answers to each exercise's visible checks, and every mistake's."""

    correct: dict[str, dict[str, dict[str, Any]]]
    """"slug/exercise" -> call key -> answer."""
    mistakes: tuple[Fingerprint, ...]


FingerprintSource = Callable[[str | None, str | None], "Fingerprints"]
_computed_by: list[FingerprintSource] = []


def compute_fingerprints_with(source: FingerprintSource) -> None:
    """Let the instructor's side compute fingerprints from its catalogue and references
    (it registers itself here when imported); this package never imports it."""
    _computed_by[:] = [source]
    load_fingerprints.cache_clear()


@functools.cache
def load_fingerprints(slug: str | None = None, exercise: str | None = None) -> Fingerprints:
    """The shipped fingerprints, or (in the full kit) ones computed from the catalogue:
    all of them, or only one exercise's when ``slug`` and ``exercise`` are given (the
    self-check computes what it needs, when it first needs it)."""
    if FINGERPRINTS.is_file():
        from .student_process.wire import decode

        data = decode(FINGERPRINTS.read_bytes())
        mistakes = tuple(
            Fingerprint(**{**f, "programs": tuple(f["programs"])}) for f in data["mistakes"]
        )
        return Fingerprints(data["correct"], mistakes)
    if _computed_by:
        return _computed_by[0](slug, exercise)
    return Fingerprints({}, ())


def as_answer(plain: dict[str, Any]) -> Answer:
    return Answer(plain["outcome"], plain["raised"], plain.get("message"))


def diagnose_by_fingerprint(
    slug: str, exercise: str, calls: list[RecordedCall]
) -> Fingerprint | None:
    """The one mistake whose answers to the visible checks explain the submission's."""
    prints = load_fingerprints(slug, exercise)
    correct = prints.correct.get(f"{slug}/{exercise}", {})
    made = [c for c in calls if c.key in correct and (c.outcome is not None or c.raised)]
    if not made:
        return None
    submission = [c.answer for c in made]
    right = [as_answer(correct[c.key]) for c in made]
    candidates = [f for f in prints.mistakes if (f.assignment, f.exercise) == (slug, exercise)]

    def explained(mistake: Fingerprint) -> bool:
        return any(
            explains(
                submission,
                right,
                [as_answer(program[c.key]) for c in made],
                memory=mistake.evidence == MEMORY,
            )
            for program in mistake.programs
        )

    return single_out(candidates, submission, explained)
