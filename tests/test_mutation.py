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
