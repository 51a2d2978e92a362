"""Mutation testing: the hidden suites fail every plausible wrong variant of each reference.

See autograder/quality/mutation.py. Every mutant of every exercise is either killed by its
lesson's hidden suite or judged equivalent in its lesson's mutation.py (JUDGED), with a
reason; a mutant that survives and differs from the reference on random inputs, or one
that agrees but nobody has judged, fails here with its description and line.
"""

from __future__ import annotations

import pytest

from attnkit.assignments import ASSIGNMENTS
from attnkit_autograder.quality.equivalence import known_equivalent
from attnkit_autograder.quality.mutation import (
    exercises,
    mutant_namespace,
    report,
    score_lesson,
)
from attnkit_autograder.quality.mutation_operators import mutants

LESSONS = list(ASSIGNMENTS)


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Tiny tensors: one thread is faster than two, and fairer to a shared machine."""
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("slug", LESSONS)
def test_every_exercise_has_compiling_mutants(slug: str) -> None:
    for exercise in exercises(slug):
        built = [m for m in mutants(slug, exercise) if mutant_namespace(m) is not None]
        assert len(built) >= 2, f"{slug}/{exercise}: only {len(built)} mutants"


@pytest.mark.parametrize("slug", LESSONS)
def test_the_hidden_suite_kills_every_non_equivalent_mutant(slug: str) -> None:
    result = score_lesson(slug)
    assert result.killed, report(result)
    assert not result.survived, report(result)
    assert not result.unjudged, "judge these in the lesson's mutation.py:\n" + report(result)
    # Every judgement still names a mutant the operators generate: none is stale.
    judged = {(slug, m.exercise, m.statement, m.description) for m, _ in result.equivalent}
    stale = {k for k in known_equivalent() if k[0] == slug} - judged
    assert not stale, f"judged equivalents that match no surviving mutant: {stale}"


def test_a_weak_suite_lets_mutants_survive() -> None:
    # The planted weak suite: lesson 2's softmax graded by its stability tests alone (huge
    # logits and masked rows, always along the last dim), so a fixed dim goes unnoticed.
    weak = score_lesson("02_self_attention", {"test_softmax_stability"}, "softmax")
    described = [m.description for m in weak.survived]
    assert any("dim=-1" in d for d in described), report(weak)
    assert weak.score < 1.0
    full = score_lesson("02_self_attention", exercise_only="softmax")
    assert not full.survived and full.generated == weak.generated


def test_every_clause_of_every_contract_is_checked_by_its_suite() -> None:
    """The clauses a mutant can break (an input modified, the result's dtype or device, a
    kept tensor left attached) are found in the contracts, and each breaks what it says and
    no value (the suites kill them all: see the test above)."""
    import numpy as np
    import torch

    from attnkit_autograder.quality.clause_mutants import clause_mutants

    softmax = {m.clause: m for m in clause_mutants("01_numpy_attention", "softmax")}
    assert set(softmax) == {"not modified", "dtype"}
    x = np.array([[1.0, 2.0, 3.0]], dtype=np.float32)
    reference = mutant_namespace(softmax["dtype"])
    assert reference is not None
    flipped = reference["softmax"](x.copy())
    modifying = mutant_namespace(softmax["not modified"])
    assert modifying is not None
    given = x.copy()
    kept_values = modifying["softmax"](given)
    assert flipped.dtype == np.float64 and kept_values.dtype == np.float32
    np.testing.assert_allclose(flipped, kept_values, rtol=1e-6)
    assert not np.array_equal(given, x)

    layer = {m.clause: m for m in clause_mutants("05_watch_attention_learn", "MultiHeadAttention")}
    assert {"not modified", "detached", "dtype"} <= set(layer)
    namespace = mutant_namespace(layer["detached"])
    assert namespace is not None
    module = namespace["MultiHeadAttention"](4, 4, 3, 0.0, 2)
    module(torch.ones(1, 3, 4))
    assert module.last_weights.requires_grad
