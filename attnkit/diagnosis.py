"""Name the classic mistake behind a failing exercise.

The catalogue (``autograder/mistakes.toml``) holds each classic mistake as code: the body
an exercise would have if a student made it. To diagnose a failing exercise:

1. while the checks run, :class:`RecordingImplementation` records every call made to the
   exercise and what came back (the outputs, or the type of the exception raised);
2. :func:`diagnose` builds each catalogued wrong *variant* of the exercise on top of a
   base namespace, replays the recorded calls against it, and names the mistake whose
   variant answers every call exactly as the submission did.

The grader builds the variants on the references. The self-check cannot: the student
bundle ships neither the references nor the catalogue's code (a wrong variant is often the
answer with one line changed). It uses *fingerprints* instead: what each variant answers
to the exercise's visible checks, which use fixed inputs. The kit computes them from the
catalogue; the bundle carries them precomputed, as plain data.

Either way a diagnosis is only ever made for an exercise that failed, so a correct
submission never receives a mistake hint.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
import tomllib
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .adapters import ADAPTERS

CATALOGUE_LOCATIONS = (("attnkit_autograder", "mistakes.toml"),)  # the instructor's kit only
FINGERPRINTS = Path(__file__).resolve().parent / "mistake_fingerprints.bin"  # student bundle


@dataclass(frozen=True)
class MistakeInfo:
    """What a classic mistake is called and how it shows, without how it is made."""

    assignment: str
    exercise: str
    id: str
    title: str
    symptom: str
    hint: str


@dataclass(frozen=True)
class Mistake(MistakeInfo):
    code: str

    @property
    def key(self) -> str:
        return f"{self.assignment}/{self.exercise}/{self.id}"


def catalogue_path() -> Path | None:
    import importlib.util

    for package, name in CATALOGUE_LOCATIONS:
        spec = importlib.util.find_spec(package)
        if spec and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                candidate = Path(folder) / name
                if candidate.is_file():
                    return candidate
    return None


@functools.cache
def load_mistakes() -> tuple[Mistake, ...]:
    path = catalogue_path()
    if path is None:
        return ()
    with path.open("rb") as handle:
        entries = tomllib.load(handle)["mistake"]
    return tuple(Mistake(**{**e, "code": textwrap.dedent(e["code"]).strip()}) for e in entries)


def mistakes_for(slug: str, exercise: str) -> list[Mistake]:
    return [m for m in load_mistakes() if m.assignment == slug and m.exercise == exercise]


# -- recording ------------------------------------------------------------------------------


@dataclass
class RecordedCall:
    adapter: str
    kwargs: dict[str, Any]
    outcome: dict[str, Any] | None = None
    raised: str | None = None


@dataclass
class RecordingImplementation:
    """Wraps an implementation and records the calls made to each exercise."""

    inner: Any
    calls: dict[str, list[RecordedCall]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.inner.label

    def run(self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any) -> dict:
        record = RecordedCall(adapter, kwargs)
        self.calls.setdefault(str(kwargs.get("name", adapter)), []).append(record)
        try:
            record.outcome = self.inner.run(adapter, forbidden=forbidden, **kwargs)
        except Exception as exc:
            record.raised = raised_type(exc)
            raise
        return record.outcome

    def close(self) -> None:
        if hasattr(self.inner, "close"):
            self.inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def raised_type(exc: BaseException) -> str:
    """The exception's type, as the submission raised it (isolated errors carry the name)."""
    return str(getattr(exc, "type_name", type(exc).__name__))


# -- variants -------------------------------------------------------------------------------


def build_variant(base: Mapping[str, Any], mistake: Mistake) -> dict[str, Any] | None:
    """``base`` with the mistake's exercise replaced by the wrong code; None if impossible."""
    target = base.get(mistake.exercise)
    if target is None:
        return None
    namespace = dict(base)
    if inspect.isclass(target):
        method = target.forward
        function = compile_body(method, mistake.code, namespace, "forward")
        namespace[mistake.exercise] = type(mistake.exercise, (target,), {"forward": function})
    else:
        namespace[mistake.exercise] = compile_body(target, mistake.code, namespace, target.__name__)
    return namespace


def compile_body(template: Any, body: str, namespace: dict[str, Any], name: str) -> Any:
    """A function with ``template``'s signature and ``body`` as its code."""
    signature = inspect.signature(template)
    params = str(signature).split(" -> ")[0]
    source = f"def {name}{params}:\n" + textwrap.indent(body, "    ")
    globals_ = {**getattr(template, "__globals__", {}), **namespace}
    exec(compile(source, f"<mistake {name}>", "exec"), globals_)  # our own catalogue's code
    return globals_[name]


# -- comparing and diagnosing ------------------------------------------------------------------


def same(a: Any, b: Any) -> bool:
    """Deep equality for adapter results, with float tolerance and NaN == NaN."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        if a.dtype == bool or b.dtype == bool or a.dtype.kind in "iu":
            return bool(np.array_equal(a, b))
        return bool(np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True))
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - {"forbidden_used", "dtype"}
        return all(same(a.get(k), b.get(k)) for k in keys)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def replay(namespace: Mapping[str, Any], call: RecordedCall) -> tuple[dict | None, str | None]:
    try:
        return ADAPTERS[call.adapter](namespace, **call.kwargs), None
    except Exception as exc:
        return None, raised_type(exc)


def diagnose(
    slug: str, exercise: str, calls: list[RecordedCall], base: Mapping[str, Any]
) -> Mistake | None:
    """The catalogued mistake whose variant answers every recorded call like the submission."""
    answered = [c for c in calls if c.outcome is not None or c.raised is not None]
    if not answered:
        return None
    for mistake in mistakes_for(slug, exercise):
        try:
            variant = build_variant(base, mistake)
        except Exception:
            continue
        if variant is None:
            continue
        if all(matches(variant, call) for call in answered):
            return mistake
    return None


def matches(variant: Mapping[str, Any], call: RecordedCall) -> bool:
    outcome, raised = replay(variant, call)
    if call.raised is not None or raised is not None:
        return call.raised == raised
    return same(strip(call.outcome), strip(outcome))


def strip(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """Drop what differs between runs without meaning (the forbidden-call record)."""
    if result is None:
        return None
    return {k: v for k, v in result.items() if k != "forbidden_used"}


# -- fingerprints: diagnosis without the catalogue's code -------------------------------------


@dataclass(frozen=True)
class Fingerprint(MistakeInfo):
    """A mistake's metadata and its answers to the visible checks (no code)."""

    answers: list[dict[str, Any]]


def compute_fingerprints() -> list[Fingerprint]:
    """Run each catalogued variant (built on the references) through its visible checks."""
    from attnkit_solutions.exercises import reference_namespace

    from .implementation import LocalImplementation
    from .selfcheck.runner import check_exercise

    prints = []
    for mistake in load_mistakes():
        variant = build_variant(reference_namespace(mistake.assignment), mistake)
        if variant is None:
            continue
        recorder = RecordingImplementation(LocalImplementation(variant, "variant"))
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")  # the variants are wrong on purpose: NaN, overflow
            check_exercise(recorder, mistake.assignment, mistake.exercise)
        answers = [
            {"adapter": c.adapter, "outcome": strip(c.outcome), "raised": c.raised}
            for c in recorder.calls.get(mistake.exercise, [])
        ]
        prints.append(
            Fingerprint(
                mistake.assignment,
                mistake.exercise,
                mistake.id,
                mistake.title,
                mistake.symptom,
                mistake.hint,
                answers,
            )
        )
    return prints


def write_fingerprints(path: Path) -> Path:
    from dataclasses import asdict

    from .wire import encode

    path.write_bytes(encode([asdict(f) for f in compute_fingerprints()]))
    return path


@functools.cache
def load_fingerprints() -> tuple[Fingerprint, ...]:
    """The shipped fingerprints, or (in the full kit) ones computed from the catalogue."""
    if FINGERPRINTS.is_file():
        from .wire import decode

        return tuple(Fingerprint(**f) for f in decode(FINGERPRINTS.read_bytes()))
    if load_mistakes():
        try:
            return tuple(compute_fingerprints())
        except ModuleNotFoundError:  # no references here: nothing to compute them from
            return ()
    return ()


def diagnose_by_fingerprint(
    slug: str, exercise: str, calls: list[RecordedCall]
) -> Fingerprint | None:
    """The mistake whose recorded answers to the visible checks equal the submission's."""
    for fingerprint in load_fingerprints():
        if fingerprint.assignment != slug or fingerprint.exercise != exercise:
            continue
        if len(fingerprint.answers) != len(calls):
            continue
        if all(
            (answer["raised"] == call.raised)
            if (answer["raised"] or call.raised)
            else same(answer["outcome"], strip(call.outcome))
            for answer, call in zip(fingerprint.answers, calls, strict=True)
        ):
            return fingerprint
    return None
