"""Failures are reported in stages: kind, shape, dtype, NaN/inf, mutation, then values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnkit.compare import CheckFailed, expect_array
from attnkit.implementation import LocalImplementation
from attnkit_autograder.grading.harness import reference_implementation, run_suite
from attnkit_solutions.exercises import reference_namespace

EXPECTED = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize(
    ("got", "stage", "words"),
    [
        ({"kind": "ndarray", "array": EXPECTED}, "kind", "NumPy array, expected a torch.Tensor"),
        ({"kind": "none"}, "kind", "None"),
        ({"kind": "tensor", "array": EXPECTED.T.copy()}, "shape", "shape [3, 2], expected [2, 3]"),
        ({"kind": "tensor", "array": EXPECTED.astype(np.float64)}, "dtype", "dtype float64"),
        ({"kind": "tensor", "array": EXPECTED * np.nan}, "finite", "NaN/inf"),
        ({"kind": "tensor", "array": EXPECTED + 1}, "values", "largest difference 1 at"),
    ],
)
def test_each_stage_names_its_problem(got, stage, words) -> None:
    with pytest.raises(CheckFailed) as err:
        expect_array(got, EXPECTED, kind="tensor")
    assert err.value.stage == stage and words in err.value.message
    # a values message shows a few numbers near the worst one, never the whole tensor
    assert len(err.value.message) < 300


@pytest.mark.parametrize(
    ("bad", "words"),
    [(np.nan, "NaN usually comes"), (-np.inf, "was masked"), (np.inf, "overflowed")],
)
def test_the_finite_stage_hints_only_at_what_the_values_show(bad, words) -> None:
    """An lse of -inf (a row that saw nothing) is not told to look for NaN."""
    got = EXPECTED.copy()
    got[1, 2] = bad
    with pytest.raises(CheckFailed) as err:
        expect_array({"kind": "tensor", "array": got}, EXPECTED, kind="tensor")
    hints = ("NaN usually comes", "was masked", "overflowed")
    assert [h for h in hints if h in err.value.hint] == [words]


def test_mutation_is_reported_before_wrong_values() -> None:
    namespace = reference_namespace("03_causal_attention")

    def apply_causal_mask(scores):  # wrong values (0, not -inf) and written in place
        return scores.masked_fill_(torch.ones_like(scores, dtype=torch.bool).triu(1), 0.0)

    namespace["apply_causal_mask"] = apply_causal_mask
    verdicts = run_suite(
        LocalImplementation(namespace),
        "03_causal_attention",
        reference_implementation("03_causal_attention"),
        grade_ids={"test_apply_causal_mask"},
    )
    assert verdicts and all(v.message == "argument 1 was modified in place" for v in verdicts)
