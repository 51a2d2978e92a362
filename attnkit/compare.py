"""Compare what an implementation returned with what it should have, in stages.

The first stage that fails produces the message, so the student hears about the most
basic problem first:

1. kind     - a torch.Tensor where a tensor is expected, an ndarray for NumPy exercises
2. shape    - with the expected shape spelled out
3. dtype
4. finite   - NaN or inf where the expected values are finite
5. mutation - the inputs were modified in place (checked by the callers, between 4 and 5)
6. values   - the largest absolute difference, where it is, and a few numbers around it

Messages show at most a handful of numbers: enough to act on, never a whole expected
tensor that could be copied into a solution.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np


class CheckFailed(AssertionError):
    """A check's verdict: what is wrong, and (optionally) a hint about why."""

    def __init__(self, message: str, hint: str | None = None, stage: str = "values") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.stage = stage


KIND_NAMES = {
    "tensor": "a torch.Tensor",
    "ndarray": "a NumPy array",
    "number": "a number",
    "sequence": "a list or tuple",
    "none": "None",
}


SINGULAR_ENDINGS = ("ss", "is", "us", "as", ")")


def is_plural(what: str) -> bool:
    """Whether a described quantity is plural ("the scores", "outputs of tokens 0-2")
    or singular ("the output", "the input x", "softmax(x, axis=0)"): its head noun, the
    last word before a qualifier, decides."""
    head = re.split(r" (?:of|after|in|for|with|at|from) | \(", what, maxsplit=1)[0]
    word = head.split()[-1] if head.split() else ""
    return word.endswith("s") and not word.endswith(SINGULAR_ENDINGS)


def verb(what: str, singular: str, plural: str) -> str:
    """``what`` followed by the verb form that agrees with it: "the scores were"."""
    return f"{what} {plural if is_plural(what) else singular}"


def kind_name(value: dict[str, Any]) -> str:
    return KIND_NAMES.get(value["kind"], f"a {value.get('type', value['kind'])}")


def expect_kind(value: dict[str, Any], kind: str, what: str = "the output") -> None:
    if value["kind"] != kind:
        hint = None
        if value["kind"] == "none":
            hint = "Did you forget a `return` statement?"
        elif kind == "tensor" and value["kind"] == "ndarray":
            hint = "Stay in PyTorch: use torch operations so the result stays a tensor."
        raise CheckFailed(
            f"{verb(what, 'is', 'are')} {kind_name(value)}, expected {KIND_NAMES[kind]}",
            hint,
            stage="kind",
        )


def expect_shape(
    value: dict[str, Any],
    shape: tuple[int, ...],
    *,
    kind: str | None = None,
    what: str = "the output",
) -> np.ndarray:
    """Kind and shape only: for checks that compare parts of the result separately."""
    if kind is not None:
        expect_kind(value, kind, what)
    if "array" not in value:
        raise CheckFailed(
            f"{verb(what, 'is', 'are')} {kind_name(value)}, expected an array", stage="kind"
        )
    if value["array"].shape != tuple(shape):
        raise CheckFailed(
            f"{verb(what, 'has', 'have')} shape {list(value['array'].shape)}, "
            f"expected {list(shape)}",
            stage="shape",
        )
    return value["array"]


def part(value: dict[str, Any], index: Any) -> dict[str, Any]:
    """The same description with only ``array[index]`` kept (the whole value if not an array)."""
    if "array" not in value or value["array"].ndim == 0:
        return value
    return {**value, "array": value["array"][index]}


def pair(value: dict[str, Any], what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two items of a returned (output, weights) pair."""
    if value["kind"] != "sequence" or len(value["items"]) != 2:
        raise CheckFailed(
            f"{what} should return a pair (output, weights), but returned {kind_name(value)}",
            stage="kind",
        )
    return value["items"][0], value["items"][1]


def expect_array(
    value: dict[str, Any],
    expected: np.ndarray,
    *,
    kind: str | None = None,
    what: str = "the output",
    atol: float = 1e-5,
    rtol: float = 1e-4,
    check_dtype: bool = True,
    values: bool = True,
) -> np.ndarray:
    """Run every stage for one returned array; return the array when it passes.

    With ``values=False`` it stops before the values stage, so a caller can check
    something else (the inputs were not modified) before comparing numbers.
    """
    expected = np.asarray(expected)
    got = _expect_layout(value, expected, kind, what, check_dtype)
    if expected.dtype == bool or got.dtype == bool:
        if values:
            _expect_same_booleans(got, expected, what)
        return got
    _expect_finite_where_expected(got, expected, what)
    if values:
        _expect_close(got, expected, what, atol, rtol)
    return got


def _expect_layout(
    value: dict[str, Any], expected: np.ndarray, kind: str | None, what: str, check_dtype: bool
) -> np.ndarray:
    """The kind, shape and dtype stages; the returned array."""
    if kind is not None:
        expect_kind(value, kind, what)
    if "array" not in value:
        raise CheckFailed(
            f"{verb(what, 'is', 'are')} {kind_name(value)}, expected an array", stage="kind"
        )
    got = value["array"]
    if got.shape != expected.shape:
        raise CheckFailed(
            f"{verb(what, 'has', 'have')} shape {list(got.shape)}, expected {list(expected.shape)}",
            stage="shape",
        )
    if check_dtype and got.dtype != expected.dtype:
        raise CheckFailed(
            f"{verb(what, 'has', 'have')} dtype {got.dtype}, expected {expected.dtype}",
            stage="dtype",
        )
    return got


def _expect_same_booleans(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    wrong = np.argwhere(got.astype(bool) != expected.astype(bool))
    if len(wrong):
        at = tuple(int(i) for i in wrong[0])
        raise CheckFailed(
            f"{verb(what, 'is', 'are')} wrong at {len(wrong)} of {got.size} positions, "
            f"first at {list(at)}: expected {bool(expected[at])}, got {bool(got[at])}"
        )


def _expect_finite_where_expected(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """The finite stage: NaN or inf where the answer is a number."""
    got_bad = ~np.isfinite(got) & np.isfinite(expected)
    if got_bad.any():
        at = tuple(int(i) for i in np.argwhere(got_bad)[0])
        raise CheckFailed(
            f"{verb(what, 'contains', 'contain')} {int(got_bad.sum())} NaN/inf value(s) where "
            "finite numbers are "
            f"expected, first at {list(at)} (got {got[at]})",
            NOT_FINITE_HINTS[_not_finite_kind(got[got_bad])],
            stage="finite",
        )


NOT_FINITE_HINTS = {
    "nan": "NaN usually comes from exp() overflowing or from -inf minus -inf.",
    "-inf": "-inf where a number is expected: everything that value was built from was masked "
    "or underflowed (look at which keys each query may see).",
    "inf": "inf where a number is expected: a value overflowed (exp() of a large score?).",
}
"""The finite stage's hint, by what the wrong values are: only what they show."""


def _not_finite_kind(bad: np.ndarray) -> str:
    if np.isnan(bad).any():
        return "nan"
    return "-inf" if (bad < 0).all() else "inf"


def _expect_close(
    got: np.ndarray, expected: np.ndarray, what: str, atol: float, rtol: float
) -> None:
    """The values stage: within tolerance, and the same infinities where the answer has one."""
    expected_finite = np.isfinite(expected)
    got64, expected64 = got.astype(np.float64), expected.astype(np.float64)
    same_infinities = np.array_equal(got64[~expected_finite], expected64[~expected_finite])
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf where both are -inf
        diff = np.where(expected_finite, np.abs(got64 - expected64), 0.0)
    tolerance = atol + rtol * np.abs(np.where(expected_finite, expected64, 0.0))
    if not (diff > tolerance).any() and same_infinities:
        return
    if not same_infinities:
        at = tuple(int(i) for i in np.argwhere(~expected_finite & (got64 != expected64))[0])
        lead = f"at {list(at)} the answer is not finite "  # no difference to speak of
    else:
        at = tuple(int(i) for i in np.unravel_index(np.argmax(diff - tolerance), diff.shape))
        lead = f"largest difference {diff.max():.4g} at {list(at)} "
    raise CheckFailed(
        f"wrong values in {what}: {lead}"
        f"(expected {_fmt(expected64[at])}, got {_fmt(got64[at])}); "
        f"near there, expected {_window(expected64, at)} got {_window(got64, at)}"
    )


def expect_unchanged(before: np.ndarray, after: np.ndarray | None, what: str) -> None:
    """The implementation must not modify its inputs in place."""
    if after is not None and not np.array_equal(before, after, equal_nan=True):
        raise CheckFailed(
            f"{verb(what, 'was', 'were')} modified in place",
            "Build new arrays instead of writing into the input (avoid `x -= ...`, "
            "`x[...] = ...`, `masked_fill_`).",
            stage="mutation",
        )


def expect_detached(kept: dict, what: str) -> None:
    """A tensor the implementation keeps after its call must be off the autograd graph
    (its description says ``attached`` only when it is False for certain)."""
    if kept.get("attached") is not False:
        raise CheckFailed(
            f"{what} is still on the autograd graph after a call",
            "Keep a detached copy (weights.detach()): a kept graph holds every activation "
            "of the call in memory.",
        )


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _window(array: np.ndarray, at: tuple[int, ...], width: int = 2) -> str:
    """Up to 2*width+1 neighbours of ``at`` along the last axis."""
    if array.ndim == 0:
        return f"[{_fmt(float(array))}]"
    last = at[-1]
    lo, hi = max(0, last - width), min(array.shape[-1], last + width + 1)
    row = array[at[:-1]][lo:hi]
    prefix = "[..., " if lo > 0 else "["
    suffix = ", ...]" if hi < array.shape[-1] else "]"
    return prefix + ", ".join(_fmt(v) for v in row) + suffix
