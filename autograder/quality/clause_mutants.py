"""Mutants that break one clause of an exercise's contract rather than one node of its code.

The operators of :mod:`.mutation_operators` change what an exercise computes. A contract
also promises what it leaves alone and how its answer comes back; each such clause gets a
mutant of its own, the reference with that one promise broken and every value it returns
unchanged, so only a hidden test that checks the clause can kill it:

* ``not modified``: the first array or tensor argument is changed in place after the call;
* a dtype of the result (``float32``, ``same dtype``): float32 results come back float64
  and float64 results float32;
* ``device``: tensor results come back on PyTorch's ``meta`` device;
* ``detached``: the tensors the module keeps after its call stay on the autograd graph.

Which clauses an exercise has is read from its contract
(:func:`attnkit_autograder.lessons.contracts.contracts`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..lessons.contracts import contracts, returned_dtypes
from .mutation_operators import Mutant

Wrapper = Callable[[Callable[..., Any]], Callable[..., Any]]


def _touch(value: Any) -> bool:
    """Change an array or tensor in place; whether ``value`` was one."""
    import torch

    if isinstance(value, torch.Tensor) and value.numel():
        with torch.no_grad():
            value.logical_not_() if value.dtype == torch.bool else value.add_(1)
        return True
    if isinstance(value, np.ndarray) and value.size and value.flags.writeable:
        if value.dtype == bool:
            np.logical_not(value, out=value)
        else:
            value += 1
        return True
    return False


def _results(value: Any, change: Callable[[Any], Any]) -> Any:
    """``change`` applied to every array or tensor of a result (tuples and lists kept)."""
    if isinstance(value, tuple | list):
        return type(value)(_results(item, change) for item in value)
    return change(value)


def _other_float(value: Any) -> Any:
    import torch

    flipped = {torch.float32: torch.float64, torch.float64: torch.float32}
    if isinstance(value, torch.Tensor) and value.dtype in flipped:
        return value.to(flipped[value.dtype])
    if isinstance(value, np.ndarray) and value.dtype in (np.float32, np.float64):
        return value.astype(np.float64 if value.dtype == np.float32 else np.float32)
    return value


def _to_meta(value: Any) -> Any:
    import torch

    return value.to("meta") if isinstance(value, torch.Tensor) else value


def modifies_inputs(function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def broken(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        any(_touch(arg) for arg in args)
        return result

    return broken


def returns_with(change: Callable[[Any], Any]) -> Wrapper:
    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def broken(*args: Any, **kwargs: Any) -> Any:
            return _results(function(*args, **kwargs), change)

        return broken

    return wrap


def keeps_attached(function: Callable[..., Any]) -> Callable[..., Any]:
    """A ``forward`` whose kept tensors are tied back to the parameters' graph (their
    values unchanged: plus zero times a parameter)."""
    import torch

    @functools.wraps(function)
    def broken(module: Any, *args: Any, **kwargs: Any) -> Any:
        result = function(module, *args, **kwargs)
        anchor = next(module.parameters(), None)
        if anchor is None or not torch.is_grad_enabled():
            return result
        for name, value in list(vars(module).items()):
            floating = isinstance(value, torch.Tensor) and value.is_floating_point()
            if floating and not value.requires_grad:
                setattr(module, name, value + 0.0 * anchor.sum())
        return result

    return broken


BREAKERS: dict[str, tuple[str, Wrapper]] = {
    "not modified": ("an argument changed in place after the call", modifies_inputs),
    "dtype": ("float32 results returned as float64 and float64 as float32",
              returns_with(_other_float)),
    "device": ("tensor results returned on the meta device", returns_with(_to_meta)),
    "detached": ("kept tensors left on the autograd graph", keeps_attached),
}  # fmt: skip
"""Each clause a mutant can break: what the mutant does, and the wrapper that does it."""


def clauses_of(docstring: str) -> list[str]:
    """The clauses of :data:`BREAKERS` that a normalised contract states."""
    found = [clause for clause in ("not modified", "device", "detached") if clause in docstring]
    if {"float32", "float64", "dtype", "dtypes"} & set(returned_dtypes(docstring)):
        found.append("dtype")
    return found


def clause_mutants(slug: str, exercise: str) -> list[Mutant]:
    """One mutant per clause of the exercise's contract that a wrapper can break."""
    docstring = contracts(slug).get(exercise, "")
    return [
        Mutant(
            slug,
            exercise,
            f"breaks '{clause}': {BREAKERS[clause][0]}",
            0,
            "",
            statement=clause,
            clause=clause,
            wrap=BREAKERS[clause][1],
        )
        for clause in clauses_of(docstring)
    ]
