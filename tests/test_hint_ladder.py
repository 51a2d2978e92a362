"""The hint ladder (``lesson.hint``) on the mistake corpora of lessons 1 and 2.

Every catalogued mistake of the corpus, checked in its notebook, climbs the rungs in order:
what the check saw, the idea, where to look, and the reference answer, which appears only
once the exercise has failed its checks ``REFERENCE_AFTER`` times. The third rung points at
a line only when exactly one line of the exercise does what the named mistake gets wrong,
and then it must be the line below (read and written down by hand): a rung that points at a
line is right whenever it speaks. Without references installed (a course's student bundle)
the ladder ends a rung earlier and says so.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import numpy as np
import pytest
from test_diagnosis_corpus import cases, namespace_of

from attnkit import hints
from attnkit.diagnosis import quiet
from attnkit.hints import REFERENCE_AFTER, RUNGS, texts
from attnkit.notebook import Lesson
from attnkit_autograder.authoring.corpus import reference_body
from attnkit_autograder.grading.catalogue import load_mistakes

LESSONS = ("01_numpy_attention", "02_self_attention")

WHERE = {
    "l1_attention_by_dk": "np.matmul(q, np.swapaxes(k, -2, -1)) / k.shape[-1]",
    "l1_attention_columns": "w = softmax(s, axis=-2)",
    "l1_attention_inverted": "s = np.where(visible, -np.inf, s)",
    "l1_attention_unscaled": "weights = softmax(raw, axis=-1)",
    "l1_attention_zero_fill": "s[..., causal_mask(X.shape[-2])] = 0",
    "l1_mask_diagonal": "return idx[None, :] >= idx[:, None]",
    "l1_mask_lower": "[[col < row for col in range(num_tokens)] for row in range(num_tokens)]",
    "l1_one_hot_width": "== np.arange(width)",
    "l1_scores_no_transpose": "return np.matmul(Q, K)",
    "l1_softmax_global_max": "e = np.exp(x - x.max())",
    "l1_softmax_no_max": "numerators = np.exp(x)",
    "l1_softmax_no_max_guarded": "e = np.exp(x)",
    "l1_softmax_sum_shifted": "denominator = np.add.reduce(z, axis=axis, keepdims=True)",
    "l2_copy_new_parameters": "getattr(v2, name).weight.detach().clone()",
    "l2_copy_reshaped": "linear.weight.data.clone().view(getattr(v1, name).shape)",
    "l2_loop_columns": "weights[:, j] = softmax(scores[:, j], dim=0)",
    "l2_matrix_T": "torch.matmul(inputs, inputs.T)",
    "l2_softmax_functional": "return F.softmax(x, dim=dim)",
    "l2_softmax_global_max": "shifted = x - torch.max(x)",
    "l2_softmax_method": "return x.softmax(dim)",
    "l2_softmax_no_max": "ex = x.exp()",
    "l2_v1_by_d_in": "/ d_in**0.5",
    "l2_v1_by_dk": "/ d_k, dim=-1",
    "l2_v1_columns": "return softmax(s, dim=-2) @ v",
    "l2_v1_keys_T": "torch.matmul(q, k.T)",
    "l2_v1_swapped": "k = torch.matmul(x, self.W_query)",
    "l2_v1_unscaled": 'softmax(torch.einsum("...qd,...kd->...qk", q, k), dim=-1)',
    "l2_v2_by_dk": "k.transpose(-2, -1)) / d_k, dim=-1)",
    "l2_v2_columns": "w = softmax(q @ k.mT / k.shape[-1] ** 0.5, dim=-2)",
    "l2_v2_swapped": "keys, queries = self.W_query(x), self.W_key(x)",
    "m2_l1_attention_sqrt_din": "scores = raw / d_model**0.5",
    "m2_l1_mask_indices": "return row > col",
    "m2_l1_softmax_apply_along_axis": "ex = np.exp(v)",
    "m2_l2_softmax_global_max": "e = x.sub(x.max()).exp()",
    "m2_l2_v1_matmul_T": "torch.matmul(q, k.T)",
    "m2_l2_v2_einsum_weights": 'torch.einsum("...i,oi->...o", x, lin.weight)',
    "m2_l2_v2_queries_from_key": "k, q, v = self.W_query(x), self.W_key(x)",
    "x2_matrix_wrong_dim": "softmax(inputs @ inputs.transpose(-2, -1), dim=-2)",
    "x2_v2_unscaled": "return softmax(q @ k.transpose(-2, -1), dim=-1) @ v",
}
"""Per corpus case, the line the third rung must point at (a piece of it)."""


@pytest.fixture
def record(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "progress.jsonl"
    monkeypatch.setenv("ATTNKIT_PROGRESS", str(path))
    return path


def said(do, *args) -> str:
    """What ``do(*args)`` prints."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), quiet():
        do(*args)
    return out.getvalue()


def heads(text: str) -> list[str]:
    return re.findall(r"· hint (\d) of (\d): (.+)", text)


def test_every_exercise_and_catalogued_mistake_has_its_words() -> None:
    from attnkit.assignments import ASSIGNMENTS

    for slug in ASSIGNMENTS:
        exercises, mistakes = texts(slug)
        if not exercises and slug[:2] > "05":
            continue  # a lesson added later: its ladder uses the contract's words until written
        assert set(exercises) == {e.name for e in ASSIGNMENTS[slug].exercises}, slug
        for (exercise, _), words in mistakes.items():
            assert exercise in exercises and words.idea and words.look
        catalogued = {(m.exercise, m.id) for m in load_mistakes() if m.assignment == slug}
        assert catalogued == set(mistakes), (slug, catalogued ^ set(mistakes))
        if slug not in LESSONS:  # lines are pointed at only where checked by hand (below)
            assert all(words.site == () for words in mistakes.values()), slug


@pytest.fixture(scope="module")
def namespaces(tmp_path_factory) -> dict[str, dict]:
    folder = tmp_path_factory.mktemp("ladder")
    return {case.name: namespace_of(case, folder) for case in cases() if case.slug in LESSONS}


@pytest.mark.slow
def test_each_catalogued_mistake_climbs_the_ladder_in_order(namespaces, record: Path) -> None:
    pointed: dict[str, str] = {}
    climbed = 0
    for case in cases():
        if case.slug not in LESSONS or case.expected is None:
            continue
        exercise, _ = case.expected
        namespace, lesson = namespaces[case.name], Lesson(case.slug)
        record.unlink(missing_ok=True)
        first = said(lesson.check, exercise, namespace)
        assert f"lesson.hint({exercise})" in first, case.name
        ladder = [said(lesson.hint, exercise) for _ in range(4)]
        assert [heads(rung)[0][:2] for rung in ladder] == [
            ("1", "4"),
            ("2", "4"),
            ("3", "4"),
            ("4", "4"),
        ]
        assert [heads(rung)[0][2] for rung in ladder] == list(RUNGS)
        reference = reference_body(case.slug, exercise)
        body = reference.splitlines()[-1].strip()
        words = " ".join(ladder[3].split())  # the prose is wrapped
        assert f"{REFERENCE_AFTER} times (1 so far)" in words and body not in ladder[3]
        for _ in range(REFERENCE_AFTER - 1):
            said(lesson.check, exercise, namespace)
        shown = said(lesson.hint, exercise)
        assert heads(shown)[0][2] == "the reference answer" and body in shown, case.name
        point = re.search(r"Look at line (\d+) of the cell that defines \w+:\n +(.+)", ladder[2])
        if point is not None:
            pointed[case.name] = point.group(2)
        climbed += 1
    assert climbed >= 40
    wrong = {name: line for name, line in pointed.items() if WHERE.get(name, "\0") not in line}
    assert wrong == {}, f"a rung pointed at a line that is not the mistake's: {wrong}"
    assert set(pointed) == set(WHERE), "a hand-checked line is no longer pointed at"


@pytest.mark.slow
def test_no_line_is_pointed_at_where_no_mistake_is_named(namespaces, record: Path) -> None:
    for case in cases():
        if case.slug not in LESSONS or case.expected is not None:
            continue
        lesson = Lesson(case.slug)
        for exercise in case.answers:
            said(lesson.check, exercise, namespaces[case.name])
            rungs = "".join(said(lesson.hint, exercise) for _ in range(3))
            assert "Look at line" not in rungs, case.name
            if case.expect == "correct":
                assert "passes its visible checks: there is nothing to hint" in rungs


def softmax_without_max(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_global_max(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)


def test_a_new_outcome_starts_the_ladder_again(record: Path) -> None:
    lesson = Lesson("01_numpy_attention")
    said(lesson.check, softmax_without_max, {"softmax": softmax_without_max})
    climbed = said(lesson.hint, "softmax") + said(lesson.hint, "softmax") + said(lesson.hint)
    assert [h[0] for h in heads(climbed)] == ["1", "2", "3"]
    assert "Look at line" in climbed and "e = np.exp(x)" in climbed
    said(lesson.check, softmax_global_max, {"softmax": softmax_global_max})
    again = said(lesson.hint, "softmax")
    assert heads(again)[0][0] == "1" and "the max of the whole array subtracted" in again


def test_without_references_the_ladder_stops_a_rung_earlier_and_says_so(
    record: Path, monkeypatch
) -> None:
    monkeypatch.setattr(hints, "reference_providers", lambda: [])
    lesson = Lesson("01_numpy_attention")
    for _ in range(REFERENCE_AFTER + 2):
        said(lesson.check, softmax_without_max, {"softmax": softmax_without_max})
    rungs = [said(lesson.hint, "softmax") for _ in range(5)]
    assert [heads(r)[0][:2] for r in rungs] == [("1", "3"), ("2", "3")] + [("3", "3")] * 3
    assert all("That is the last hint here" in r for r in rungs[2:])
    assert not any("reference answer" in r.split("\n", 1)[0] for r in rungs)
    assert "np.where(np.isfinite(shift), shift, 0.0)" not in "".join(rungs)


def test_the_reference_counts_failed_checks_across_restarts(record: Path) -> None:
    """The count of failed checks comes from the progress record: a new kernel (a new
    Lesson) remembers them; a pass starts the count again."""
    for _ in range(REFERENCE_AFTER):
        said(
            lambda: Lesson("01_numpy_attention").check(
                softmax_without_max, {"softmax": softmax_without_max}
            )
        )
    lesson = Lesson("01_numpy_attention")
    said(lesson.check, softmax_without_max, {"softmax": softmax_without_max})
    rungs = [said(lesson.hint, "softmax") for _ in range(4)]
    assert "The kit's reference answer" in rungs[3]


def test_hint_before_any_check_says_to_check_first(record: Path) -> None:
    lesson = Lesson("01_numpy_attention")
    assert "Run lesson.check(softmax) first" in said(lesson.hint, "softmax")
    assert "hint() needs an exercise" in said(lesson.hint, "nonsense")
