"""Helpers shared by the hidden suites: inputs, and comparisons with the reference."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from attnkit.compare import CheckFailed, expect_array, expect_kind, expect_unchanged, pair, part

from .harness import Subject

# -- random inputs -----------------------------------------------------------------------------
#
# The suites' random inputs (the arrays a test hands to an exercise, the weight matrices of
# lesson 1, masks, token ids, training batches) come from :func:`randn` and :func:`rng` alone.
# While a submission's hidden tests run with ``attnkit grade --seed-per-student``, a salt
# derived from the student (see attnkit_autograder.grading.per_student) is mixed into every such
# seed, so each student is checked on inputs of their own. Without a salt the seeds are
# used as they are: the inputs are exactly those the suites always had.
#
# Never salted, because they are the same for every student by design: the book's inputs
# (BOOK_INPUTS) and the inputs of the book-seed tests (``per_student=False``), the dataloader
# batches of verdict_embeddings(), hand-written edge cases, and the seeds a test passes to
# an implementation (``seed=`` for a module's initial parameters, ``forward_seed=`` for
# dropout): the book-seed tests compare parameters drawn from the book's seeds, and the
# other tests load the reference's parameters into the submission, so only their inputs
# need to differ between students.

_salt: contextvars.ContextVar[int | None] = contextvars.ContextVar("input_salt", default=None)


class Draws:
    """The seeds a submission's random inputs were drawn from, in order: its digest, kept
    with the result, shows the inputs were the student's own (two students, two digests)."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()
        self.count = 0

    def add(self, seed: int) -> None:
        self._digest.update(seed.to_bytes(8, "little"))
        self.count += 1

    def digest(self) -> str:
        return self._digest.hexdigest()[:16]


_draws: contextvars.ContextVar[Draws | None] = contextvars.ContextVar("draws", default=None)


@contextlib.contextmanager
def salted(salt: int) -> Iterator[Draws]:
    """Draw every random input from ``salt`` mixed with its seed, inside this block only;
    the block's :class:`Draws` records the seeds drawn."""
    draws = Draws()
    token, draws_token = _salt.set(salt), _draws.set(draws)
    try:
        yield draws
    finally:
        _salt.reset(token)
        _draws.reset(draws_token)


def current_salt() -> int | None:
    return _salt.get()


def input_seed(seed: int) -> int:
    """The seed a random input is drawn from: ``seed`` itself, or, under a salt, a 64-bit
    seed derived from the salt and ``seed`` together."""
    salt = _salt.get()
    if salt is None:
        return seed
    state = np.random.SeedSequence([salt, seed]).generate_state(1, dtype=np.uint64)
    drawn = int(state[0])
    if (draws := _draws.get()) is not None:
        draws.add(drawn)
    return drawn


def rng(seed: int) -> np.random.Generator:
    """The generator of a test's random inputs (see :func:`input_seed`)."""
    return np.random.default_rng(input_seed(seed))


def shared_rng(seed: int) -> np.random.Generator:
    """The generator of what every student is given alike (a suite's shapes, a book's
    seed): never salted per student, unlike :func:`rng`."""
    return np.random.default_rng(seed)


def randn(
    *shape: int, seed: int, dtype: Any = np.float32, scale: float = 1.0, per_student: bool = True
) -> np.ndarray:
    """Standard normal values of ``shape``, times ``scale``. ``per_student=False`` only for
    the inputs of a book-seed test, which every student must be given alike."""
    generator = rng(seed) if per_student else shared_rng(seed)
    return (generator.normal(size=shape) * scale).astype(dtype)


@functools.cache
def verdict_embeddings(batch_size: int = 8, num_tokens: int = 6, dim: int = 16) -> np.ndarray:
    """Token + position embeddings of real batches from the-verdict.txt dataloader.

    The embedding tables are seeded, so every run and every submission sees the same
    [batch_size, num_tokens, dim] float32 array.
    """
    import torch
    from torch import nn

    from attnkit_data import create_dataloader_v1, read_verdict

    loader = create_dataloader_v1(
        read_verdict(),
        batch_size=batch_size,
        max_length=num_tokens,
        stride=num_tokens,
        shuffle=False,
    )
    token_ids, _ = next(iter(loader))
    generator = torch.Generator().manual_seed(2024)
    token_table = torch.randn(50_257, dim, generator=generator) / dim**0.5
    position_table = torch.randn(num_tokens, dim, generator=generator) / dim**0.5
    with torch.no_grad():
        embedded = nn.functional.embedding(token_ids, token_table) + position_table
    return embedded.numpy().astype(np.float32)


def same_call(
    submission: Subject,
    reference: Subject,
    exercise: str,
    *args: Any,
    kind: str,
    outputs: int = 1,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    **kwargs: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Call a function exercise on both and compare, in the order of compare.py's stages:
    kind, shape, dtype and NaN/inf first, then that the inputs are unchanged, then values."""
    got = submission.probe(exercise).call(*args, **kwargs)
    want = reference.probe(exercise).call(*args, **kwargs)
    compare_outputs(got["out"], want["out"], exercise, kind, outputs, atol, rtol, values=False)
    for index, (before, after) in enumerate(zip(args, got["inputs_after"], strict=False)):
        if isinstance(before, np.ndarray):
            expect_unchanged(before, after, f"argument {index + 1}")
    compare_outputs(got["out"], want["out"], exercise, kind, outputs, atol, rtol)
    return got, want


def compare_outputs(
    got: dict[str, Any],
    want: dict[str, Any],
    exercise: str,
    kind: str,
    outputs: int,
    atol: float,
    rtol: float,
    values: bool = True,
) -> None:
    stages = {"kind": kind, "atol": atol, "rtol": rtol, "values": values}
    if outputs == 1:
        expect_array(got, want["array"], **stages)
        return
    got_first, got_second = pair(got, exercise)
    want_first, want_second = pair(want, exercise)
    expect_array(got_first, want_first["array"], what="the output", **stages)
    expect_array(got_second, want_second["array"], what="the weights", **stages)


def same_module(
    submission: Subject,
    reference: Subject,
    exercise: str,
    init_args: list[Any],
    inputs: list[np.ndarray],
    *,
    outputs: int = 1,
    seed: int = 0,
    shared_weights: bool = True,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    **kwargs: Any,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run a module exercise on both with the same weights; compare outputs (and gradients).

    With ``shared_weights`` the reference's initial parameters are loaded into the
    submission by name, so the comparison does not depend on initialisation order.
    """
    want = reference.probe(exercise).module(init_args, inputs, seed=seed, **kwargs)
    state = want["params"] if shared_weights else None
    got = submission.probe(exercise).module(init_args, inputs, seed=seed, state=state, **kwargs)
    compare_outputs(got["out"], want["out"], exercise, "tensor", outputs, atol, rtol, values=False)
    for index, (before, after) in enumerate(zip(inputs, got["inputs_after"], strict=False)):
        expect_unchanged(before, after, f"input {index + 1}")
    compare_outputs(got["out"], want["out"], exercise, "tensor", outputs, atol, rtol)
    if kwargs.get("grad_output") is not None:
        for name, expected in want["grads"].items():
            actual = got["grads"].get(name)
            if actual is None:
                raise CheckFailed(
                    f"no gradient reaches parameter {name}",
                    "Something detaches the computation from this parameter (e.g. .data, "
                    ".detach(), numpy, or a parameter that is never used).",
                )
            expect_array(
                {"kind": "tensor", "array": actual},
                expected,
                what=f"the gradient of {name}",
                atol=atol * 10,
                rtol=rtol * 10,
            )
    return got, want


def expect_causal(
    submission: Subject,
    exercise: str,
    init_args: list[Any],
    x: np.ndarray,
    changed_from: int,
    shift: float = 10.0,
    seed: int = 0,
) -> None:
    """Changing tokens ``changed_from``.. must leave every earlier token's output unchanged."""
    changed = x.copy()
    changed[:, changed_from:] += shift
    probe = submission.probe(exercise)
    base = probe.module(init_args, [x], seed=seed)["out"]
    moved = probe.module(init_args, [changed], seed=seed)["out"]
    expect_kind(base, "tensor")
    expect_kind(moved, "tensor")
    last = x.shape[1] - 1
    expect_array(
        part(moved, (slice(None), slice(0, changed_from))),
        base["array"][:, :changed_from],
        what=f"outputs of tokens 0-{changed_from - 1} after changing tokens {changed_from}-{last}",
    )


def contract(exercise: str, *clauses: str) -> pytest.MarkDecorator:
    """Declare which clauses of ``exercise``'s released docstring a hidden test enforces.

    Every hidden test carries one: a kit test (tests/test_contracts.py) checks that each
    clause appears, word for word, in the exercise's docstring in the student notebook,
    so a student is never graded on a property the contract does not state.
    """
    return pytest.mark.contract(exercise, *clauses)
