"""The checks' messages agree in number with what they describe ("the scores were")."""

from __future__ import annotations

import numpy as np
import pytest

from attnkit.compare import CheckFailed, expect_array, expect_unchanged, is_plural
from attnkit.diagnosis import fix_helpers_first


@pytest.mark.parametrize(
    ("what", "plural"),
    [
        ("the scores", True),
        ("the context vectors", True),
        ("the weights of query 2", True),
        ("outputs of tokens 0-2 after changing tokens 3-4", True),
        ("the weight row sums", True),
        ("the output", False),
        ("the input x", False),
        ("the context vector of query 2", False),
        ("softmax(x, axis=0)", False),
        ("the bias", False),
        ("the gradient of W_query.weight", False),
        ("argument 1", False),
    ],
)
def test_number_follows_the_head_noun(what: str, plural: bool) -> None:
    assert is_plural(what) is plural


def failure(*args, **kwargs) -> str:
    with pytest.raises(CheckFailed) as caught:
        expect_array(*args, **kwargs)
    return caught.value.message


def test_each_stage_speaks_in_the_right_number() -> None:
    value = {"kind": "tensor", "dtype": "float64", "array": np.zeros((2, 3))}
    assert failure(value, np.zeros((3, 2)), what="the scores").startswith("the scores have shape")
    assert failure(value, np.zeros((2, 3), np.float32), what="the output").startswith(
        "the output has dtype"
    )
    assert failure(value, np.zeros((2, 3)), kind="ndarray", what="the context vectors").startswith(
        "the context vectors are a torch.Tensor"
    )
    nan = {**value, "array": np.full((2, 3), np.nan)}
    assert failure(nan, np.zeros((2, 3)), what="the weights").startswith("the weights contain 6")
    with pytest.raises(CheckFailed) as caught:
        expect_unchanged(np.zeros(2), np.ones(2), "the scores")
    assert caught.value.message == "the scores were modified in place"


def test_the_helpers_first_hint_names_each_helper_in_the_right_number() -> None:
    one = fix_helpers_first("self_attention", ["scale_scores"])
    assert "fix `scale_scores` first" in one and "which fails its own checks" in one
    two = fix_helpers_first("self_attention", ["softmax", "scale_scores"])
    assert "`softmax` and `scale_scores`, which fail their own checks" in two
