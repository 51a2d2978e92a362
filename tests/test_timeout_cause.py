"""A softmax that never returns is reported once, at softmax: the exercises that call it
say they were not run because softmax did not return, not that they hold a loop."""

from __future__ import annotations

from attnkit.outcome import PASSED, TIMEOUT, Outcome
from attnkit_autograder.grading.explain import one_cause_for_timeouts
from attnkit_autograder.grading.scoring import score_cells
from attnkit_autograder.lessons.rubric import graded_cells

SLUG = "02_self_attention"
LOOP = "the call ran out of its 10 s"
HINT = "Look for a loop that never ends."


def cells_with(timeouts: set[str]) -> list[dict]:
    verdicts = [
        Outcome(c.exercise, "check", TIMEOUT if c.exercise in timeouts else PASSED,
                LOOP if c.exercise in timeouts else "", HINT if c.exercise in timeouts else None,
                grade_id=c.grade_id)
        for c in graded_cells(SLUG)
    ]  # fmt: skip
    tests = score_cells(SLUG, verdicts)
    one_cause_for_timeouts(SLUG, tests)
    return tests


def test_the_exercises_that_call_a_looping_softmax_name_it_once() -> None:
    callers = {"simple_attention_loop", "simple_attention_matrix", "SelfAttention_v1",
               "SelfAttention_v2"}  # fmt: skip
    tests = cells_with({"softmax", *callers})
    for test in tests:
        if test["exercise"] == "softmax":
            assert (test["message"], test["hint"]) == (LOOP, HINT)
        elif test["exercise"] in callers:
            assert test["message"] == "not run: your `softmax` did not return"
            assert test["hint"] is None and test["status"] == TIMEOUT
        else:
            assert test["status"] == PASSED
    assert sum(t["hint"] == HINT for t in tests) == 2  # softmax's two cells, nobody else's


def test_a_caller_that_loops_on_its_own_keeps_its_message() -> None:
    tests = cells_with({"SelfAttention_v1"})  # softmax returns: the loop is v1's own
    (v1, *_) = [t for t in tests if t["exercise"] == "SelfAttention_v1"]
    assert (v1["message"], v1["hint"]) == (LOOP, HINT)
