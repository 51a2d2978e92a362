"""Calling student code: the one home of *implementations*.

An implementation is anything that answers adapter calls (``impl.run(adapter, **kwargs)``).
The self-check and the hidden suites talk to implementations only through that, so a test
does not care where the code runs:

* :class:`LocalImplementation`: definitions in this process (a notebook's namespace, the
  references, a catalogued mistake);
* :class:`RecordingImplementation`: wraps another and records every call and its outcome,
  which diagnosis replays;
* the grader's isolated implementation: a submission in the grading sandbox (it lives
  with the sandbox, on the instructor's side, which this package never imports).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .adapters import ADAPTERS
from .student_process.recorder import HOOKS, Recorder, torch_loaded
from .student_process.withheld import WITHHELD_TYPE, KernelWithheld
from .tensor_memory import out_of_memory

MESSAGE_CHARS = 100
"""What the kit keeps of an exception a submission's code raised: the first line of its
message, this long (see :func:`bounded_message`)."""


class Implementation(Protocol):
    @property
    def label(self) -> str: ...

    def run(
        self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any
    ) -> dict[str, Any]: ...


class LocalImplementation:
    """Definitions living in this process, e.g. a notebook's namespace or a reference module.

    Exceptions raised by the implementation propagate unchanged; ``forbidden_used`` in
    the result lists the forbidden calls made during the call.
    """

    def __init__(self, namespace: Mapping[str, Any], label: str = "implementation") -> None:
        self.namespace = namespace
        self.label = label

    def run(
        self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any
    ) -> dict[str, Any]:
        return call_recorded(self.namespace, adapter, forbidden, kwargs)


def recorded_caller() -> Callable[..., dict[str, Any]]:
    """:func:`call_recorded` with the recorder and the adapters it uses bound now.

    The sandboxed worker takes its caller before any student code runs: replacing
    ``call_recorded``, ``Recorder``'s methods or an adapter in their modules afterwards
    changes nothing it calls. (Code that digs out the worker's own objects can still
    forge what the worker reports; the scan notes such digging for the instructor.)"""
    recorder_class = type(
        "Recorder",
        (Recorder,),
        {
            k: v
            for k, v in vars(Recorder).items()
            if (not k.startswith("__") or callable(v)) and k != HOOKS  # hook classes of its own
        },
    )
    if torch_loaded():
        recorder_class.hook_classes()
    adapters = dict(ADAPTERS)

    def call(
        namespace: Mapping[str, Any],
        adapter: str,
        forbidden: Iterable[str],
        kwargs: Mapping[str, Any],
        alone: Callable[[], str | None] | None = None,
    ) -> dict[str, Any]:
        """Call ``adapter`` on ``namespace`` while the forbidden-call recorder watches: the
        one place student code is called, here and in the sandboxed worker.

        The result lists the forbidden calls seen (``forbidden_used``) and, when the
        recorder's findings cannot be trusted, why (``forbidden_unverified``): it missed one
        of the canary calls made before and after the exercise, or ``alone()`` says another
        thread could have run code it does not see.
        """
        with recorder_class(forbidden) as recorder:
            recorder.canary()
            try:
                result = adapters[adapter](namespace, **kwargs)
            except KernelWithheld:
                # In a worker without the kernel (see withheld.py): name the call that led
                # there, as the recorder saw it, when it did.
                if recorder.used:
                    raise KernelWithheld(next(iter(recorder.used))) from None
                raise
            recorder.canary()
        result["forbidden_used"] = list(recorder.used)
        if recorder.reached:
            result["kernels_reached"] = recorder.kernel_names()
        reason = recorder.unverified() or (alone() if alone and forbidden else None)
        if reason:
            result["forbidden_unverified"] = reason
        return result

    return call


call_recorded = recorded_caller()


# -- recording: what the checks asked, and what came back -----------------------------------


@dataclass(frozen=True)
class Answer:
    """What one call gave back: an adapter result, or the exception raised (type, message)."""

    outcome: dict[str, Any] | None
    raised: str | None
    message: str | None = None

    @property
    def ran_forbidden(self) -> bool:
        """The call ran a forbidden function, or needed a kernel the grader withheld."""
        return bool(self.outcome and self.outcome.get("forbidden_used")) or (
            self.raised == WITHHELD_TYPE
        )

    @property
    def ran_out_of_memory(self) -> bool:
        """The call raised what a call that runs out of memory raises (see
        attnkit.tensor_memory.out_of_memory)."""
        return out_of_memory(self.raised, self.message)

    def plain(self) -> dict[str, Any]:
        return {"outcome": strip(self.outcome), "raised": self.raised, "message": self.message}

    def singles_out(self, wrong: Answer) -> bool:
        """Whether agreeing with ``wrong`` here is evidence, not coincidence: a returned
        value, or the very same error message (its shapes and sizes), never a type alone."""
        return self.raised is None or (bool(self.message) and self.message == wrong.message)


def strip(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """Drop what is not an answer (the forbidden-call record, judged on its own)."""
    if result is None:
        return None
    return {k: v for k, v in result.items() if k not in RECORDER_KEYS}


RECORDER_KEYS = ("forbidden_used", "forbidden_unverified", "kernels_reached", "memory")
"""What the recorder (and the memory watch) add to an adapter's result: not part of the
answer."""


@dataclass
class RecordedCall:
    adapter: str
    kwargs: dict[str, Any]
    outcome: dict[str, Any] | None = None
    raised: str | None = None
    message: str | None = None

    @property
    def answer(self) -> Answer:
        """The call's outcome as diagnosis compares it."""
        return Answer(self.outcome, self.raised, self.message)

    @property
    def key(self) -> str:
        """The same for the same request, in any process: what fingerprints are keyed by."""
        from .student_process.wire import encode

        return hashlib.sha256(encode([self.adapter, self.kwargs])).hexdigest()


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
            record.raised, record.message = raised_type(exc), raised_message(exc)
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


def bounded_message(text: str) -> str:
    """The first line of ``text``, printable, at most MESSAGE_CHARS long. A hidden test's
    inputs pass through the student's code, so what its exceptions say is all a student
    could carry out of the grader in feedback: this bounds it. The grader's reading of an
    isolated error and diagnosis's replay of a mistake both keep exactly this, so the two
    compare equal."""
    lines = text.splitlines()
    first = lines[0] if lines else ""
    return "".join(c if c.isprintable() else "?" for c in first[:MESSAGE_CHARS])


def raised_message(exc: BaseException) -> str:
    """The exception's message, without its type (isolated errors carry it apart)."""
    return bounded_message(str(getattr(exc, "message", exc)))
