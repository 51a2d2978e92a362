"""Everything the grader does with student text or replies is total: it succeeds or raises
its one typed refusal, for any input at all. Proved with generated inputs (hypothesis):
random and adversarial bytes, deep nesting, huge numbers, NULs, wrong types, missing keys.
"""

from __future__ import annotations

import contextlib
import json
import struct
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from attnkit.adapters import ADAPTERS, MalformedResult, validate_result
from attnkit.notebook_code import Cell, NotebookError, is_check_cell, parse_python, read_cells
from attnkit.student_process.wire import WireError, decode, encode
from attnkit_autograder.grading.scan import scan_source, tampering

FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

# Text a student can write: anything, and the shapes that break parsers.
nasty_text = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
    st.builds(
        lambda n, c: c * n, st.integers(0, 20_000), st.sampled_from(["-", "(", "[", "not ", "~"])
    ),
    st.builds(lambda n: "(" * n + "x" + ")" * n, st.integers(0, 5_000)),
    st.builds(lambda n: "x" + "+x" * n, st.integers(0, 50_000)),
    st.builds(lambda s, i: s[:i] + "\0" + s[i:], st.text(max_size=50), st.integers(0, 50)),
    st.just("lesson.check(softmax)\x00"),
    st.builds(lambda n: "1" * n, st.integers(0, 10_000)),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=30,
)


@FAST
@given(nasty_text)
def test_parsing_student_text_never_raises(source: str) -> None:
    tree = parse_python(source)
    assert tree is None or hasattr(tree, "body")
    assert isinstance(is_check_cell(source), bool)
    assert isinstance(scan_source(source, ["torch.softmax", "torch.nn.functional.softmax"]), list)
    assert isinstance(tampering([(1, source)]), list)


def notebook_bytes(cells: list, nbformat: object) -> bytes:
    return json.dumps({"nbformat": nbformat, "cells": cells}).encode("utf-8", "surrogatepass")


notebooks = st.one_of(
    st.binary(max_size=500),
    st.builds(
        notebook_bytes, st.lists(json_values, max_size=5), st.sampled_from([4, 3, "4", None])
    ),
    st.builds(
        notebook_bytes,
        st.lists(
            st.fixed_dictionaries(
                {"cell_type": st.just("code"), "source": st.one_of(nasty_text, json_values)},
                optional={"metadata": json_values},
            ),
            max_size=4,
        ),
        st.just(4),
    ),
    st.builds(lambda n: b"[" * n + b"]" * n, st.integers(0, 100_000)),
    st.builds(lambda n: b'{"nbformat": 4, "cells": ' + b"9" * n + b"}", st.integers(0, 20_000)),
)


@FAST
@given(notebooks, st.sampled_from([".ipynb", ".py"]))
def test_reading_any_file_gives_cells_or_one_refusal(raw: bytes, suffix: str) -> None:
    try:
        cells = read_cells(Path(f"submission{suffix}"), raw)
    except NotebookError:
        return
    assert all(isinstance(c, Cell) and isinstance(c.source, str) for c in cells)
    for cell in cells:
        assert isinstance(cell.is_check_cell, bool)


def framed(document: object, tail: bytes = b"") -> bytes:
    body = json.dumps(document, allow_nan=True).encode()
    return struct.pack(">Q", len(body)) + body + tail


array_refs = st.fixed_dictionaries(
    {
        "__nd__": st.one_of(
            st.lists(
                st.one_of(st.integers(-(2**70), 2**70), st.floats(), st.booleans()), max_size=3
            ),
            json_values,
        ),
        "dtype": st.one_of(st.sampled_from(["<f4", "<f8", "|b1", "<i8", "O", "|S3"]), json_values),
        "shape": st.one_of(
            st.lists(st.one_of(st.integers(-5, 2**64), st.floats(), st.just(10**400)), max_size=40),
            json_values,
        ),
    }
)
wire_messages = st.one_of(
    st.binary(max_size=300),
    st.builds(framed, json_values, st.binary(max_size=64)),
    st.builds(framed, st.lists(array_refs, max_size=3), st.binary(max_size=64)),
    st.builds(lambda n: framed(None)[:8] + b"[" * n, st.integers(0, 100_000)),
    st.builds(lambda d: struct.pack(">Q", len(d) + 5) + d, st.binary(max_size=30)),
    st.just(b"\x00" * 7),
    st.builds(lambda n: framed(json.loads("1" * n) if n < 4000 else 0), st.integers(1, 10)),
    st.builds(lambda n: struct.pack(">Q", n + 2) + b'["' + b"9" * n, st.integers(0, 5000)),
)


@FAST
@given(wire_messages)
def test_decoding_any_bytes_gives_a_value_or_one_refusal(message: bytes) -> None:
    with contextlib.suppress(WireError):
        decode(message)


def test_the_shapes_that_broke_decoding_are_refusals() -> None:
    for shape in ([1e400], [2**63, 2**63], [True, 3], [-1], [1.5], "[]", [10**30]):
        message = framed([{"__nd__": [0, 4], "dtype": "<f4", "shape": shape}], b"\0" * 4)
        try:
            decode(message)
        except WireError:
            continue
        raise AssertionError(f"shape {shape!r} decoded")
    message = b"\x00\x00\x00\x00\x00\x00\x00\x10" + b'[{"__nd__": [0, ' + b"9" * 5000 + b"]}]"
    with contextlib.suppress(WireError):
        decode(struct.pack(">Q", len(message) - 8) + message[8:])
    assert decode(encode({"a": np.arange(6, dtype=np.float32).reshape(2, 3)}))["a"].shape == (2, 3)


REPLY_KEYS = [
    "out",
    "kind",
    "array",
    "dtype",
    "items",
    "inputs_after",
    "params",
    "buffers",
    "grads",
    "v1",
    "v2",
    "raised",
]
REPLY_KEYS += ["returned_v1", "shapes", "forbidden_used", "type"]
replies = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=10)
    | st.builds(np.asarray, st.lists(st.floats(width=32), max_size=4)),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(REPLY_KEYS) | st.text(max_size=5),
            children,
            max_size=6,
        )
    ),
    max_leaves=25,
)


@FAST
@given(st.sampled_from([*ADAPTERS, "unknown"]), replies)
# Values no check can compare with `in` or `==`: an array where text is expected.
@example("call_function", {"out": {"kind": np.array([])}})
@example("cache_steps", {"steps": [{"raised": np.array([1.0, 2.0])}]})
def test_validating_any_reply_gives_it_back_or_one_refusal(adapter: str, reply: object) -> None:
    with contextlib.suppress(MalformedResult):
        assert validate_result(adapter, reply) is reply


@FAST
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.dictionaries(
            st.sampled_from(["type", "message", "name"]),
            st.one_of(st.text(max_size=3000), st.integers(), st.none()),
        ),
    )
)
def test_what_a_submission_raised_carries_bounded_text(error) -> None:
    """Whatever the worker says the student's code raised, the feedback carries at most a
    short first line of it (hidden inputs pass through that code)."""
    from attnkit.adapters import MissingDefinition
    from attnkit.implementation import MESSAGE_CHARS
    from attnkit_autograder.sandbox.errors import (
        KNOWN_TYPES,
        STUDENT_TYPE_CHARS,
        SubmissionError,
        WorkerCrashed,
        raised_in_submission,
    )

    raised = raised_in_submission(error)
    assert isinstance(
        raised, SubmissionError | WorkerCrashed | NotImplementedError | MissingDefinition
    )
    if isinstance(raised, SubmissionError):
        assert len(raised.type_name) <= STUDENT_TYPE_CHARS
        # A class the notebook named itself is not repeated: its name could carry inputs.
        assert raised.type_name in KNOWN_TYPES
        assert len(raised.message) <= MESSAGE_CHARS
        assert "\n" not in str(raised)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(nasty_text, st.text(alphabet="\x1b\x00\u202e\r\n\t[2J", max_size=60))))
@example(["\x1b" * 1000])
def test_notes_are_bounded_printable_text_whatever_a_submission_causes(notes) -> None:
    """However many notes a submission causes, whatever they quote: bounded in count and
    size, and no control byte, NUL or direction override reaches a report or a terminal."""
    from attnkit_autograder.grading.records import (
        MAX_NOTE_CHARS,
        MAX_NOTES,
        MAX_NOTES_CHARS,
        capped_notes,
    )

    kept = capped_notes(notes)
    assert len(kept) <= MAX_NOTES + 1
    assert sum(len(n) for n in kept) <= MAX_NOTES_CHARS + 40
    assert all(len(n) <= MAX_NOTE_CHARS and n.isprintable() for n in kept)
    if len(notes) <= MAX_NOTES and all(n.isprintable() and len(n) < 100 for n in notes):
        assert kept == notes
    if notes and len(notes[0]) > MAX_NOTE_CHARS:
        assert kept[0].endswith("…")  # a cut note says it was cut
