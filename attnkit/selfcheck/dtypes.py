"""Visible checks of the dtype a result must have, with a hint a student can act on."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..compare import CheckFailed, expect_kind, verb

KEEP_DTYPE_HINT = (
    "Keep the input's dtype: build new arrays from the input (zeros_like, or dtype=x.dtype) "
    "and divide by plain Python numbers; float64 constants or arrays promote float32."
)


def expect_dtype(value: dict[str, Any], dtype: Any, *, kind: str, what: str = "the output") -> None:
    """``value`` is a ``kind`` (tensor or ndarray) whose dtype is ``dtype``."""
    expect_kind(value, kind, what)
    got = value["array"].dtype
    if got != np.dtype(dtype):
        raise CheckFailed(
            f"{verb(what, 'has', 'have')} dtype {got}, expected {np.dtype(dtype)}",
            KEEP_DTYPE_HINT,
            stage="dtype",
        )
