"""What a sandboxed submission raised, or how its worker failed, as the grader names it.

Everything here reads untrusted replies: a type name is repeated only if it is Python's own
or one of the few the kit knows, and every text is bounded and printable.
"""

from __future__ import annotations

import builtins
from typing import Any

from attnkit.adapters import MissingDefinition
from attnkit.implementation import bounded_message
from attnkit.student_process.withheld import WITHHELD_TYPE


class WorkerTimeout(Exception):
    """A call (or the submission's whole budget) ran out of time."""


class WorkerCrashed(Exception):
    """The worker process died while answering, or sent something that is not an answer."""


class SubmissionError(Exception):
    """The submission's code raised an exception; ``type_name`` is its class name."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(f"{type_name}: {message}")
        self.type_name = type_name
        self.message = message


def untrusted_text(value: Any, limit: int = 300) -> str:
    """Untrusted text from the sandbox, as a bounded, printable string."""
    text = value if isinstance(value, str) else ""
    return "".join(c if c.isprintable() else "?" for c in text[:limit])


WITHHELD_NOTE = (
    "code cell {index} calls a library softmax or attention kernel, which the grader "
    "withholds while it grades the exercises you write from scratch, so that statement was "
    "left out and the rest of the cell ran without it; this costs nothing unless something "
    "graded needs what it made (then keep such comparisons in a cell of their own)"
)


STUDENT_TYPE_CHARS = 40
"""How much of a submission's exception type name is kept (its message: see
attnkit.implementation.bounded_message)."""


KNOWN_TYPES = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
) | {
    "MissingDefinition",
    "AxisError",
    "LinAlgError",
    "OutOfMemoryError",
    "_ArrayMemoryError",  # NumPy's MemoryError
    "HeldTooMuch",  # the kit's memory watch (attnkit.tensor_memory)
    WITHHELD_TYPE,
}
"""The exception names feedback repeats: Python's own and the libraries' few. A class the
notebook defines could name itself anything (the inputs it saw included), so it is called
``Exception``: only the bounded message is the student's to say."""


def known_type(name: Any) -> str:
    text = untrusted_text(name, STUDENT_TYPE_CHARS)
    return text if text in KNOWN_TYPES else "Exception"


def raised_in_submission(error: Any) -> Exception:
    """The local exception that stands for what the submission raised."""
    if not isinstance(error, dict):
        return WorkerCrashed("the submission's process sent an unexpected reply")
    text = error.get("message")
    type_name, message = (
        known_type(error.get("type")),
        bounded_message(text if isinstance(text, str) else ""),
    )
    if type_name == "NotImplementedError":
        return NotImplementedError(message)
    if type_name == "MissingDefinition":
        return MissingDefinition(untrusted_text(error.get("name"), 120) or message)
    if type_name == "MemoryError":
        return SubmissionError("MemoryError", "used more memory than the grader allows")
    return SubmissionError(type_name, message)
