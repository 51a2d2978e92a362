"""Run one graded cell's hidden tests inside an nbgrader kernel.

In the source notebooks, every graded cell ends with

    run_hidden_tests("02_self_attention", "test_v1_forward", globals())

nbgrader keeps that line out of the student notebooks and puts it back when it
autogrades. It runs the hidden tests of that cell against the notebook's own
definitions, and raises AssertionError if any fails, which is how nbgrader knows the
cell failed.

This runs in the student's kernel, as nbgrader always does, so a submission that
tampers with its own interpreter can fool it; ``attnkit grade`` isolates submissions
and cannot be fooled that way.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from typing import Any

from attnkit.implementation import LocalImplementation

from .grading.harness import PASSED, reference_implementation, run_suite


def run_hidden_tests(slug: str, grade_id: str, namespace: dict[str, Any]) -> None:
    import torch  # noqa: F401  (loaded, so the recorder watches PyTorch even in lesson 1)

    # nbgrader fails any graded cell that writes to stderr, so a harmless warning from a
    # correct answer (an overflow in a demo, a deprecation) would cost full points.
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        warnings.simplefilter("ignore")
        verdicts = run_suite(
            LocalImplementation(dict(namespace), label="notebook"),
            slug,
            reference_implementation(slug),
            grade_ids={grade_id},
        )
    failures = [v for v in verdicts if v.status != PASSED]
    if failures:
        lines = [f"{len(failures)} of {len(verdicts)} hidden tests failed for {grade_id}:"]
        lines += [f"- {v.status}: {v.message}" for v in failures[:5]]
        raise AssertionError("\n".join(lines))
    print(f"{grade_id}: all {len(verdicts)} hidden tests passed")
