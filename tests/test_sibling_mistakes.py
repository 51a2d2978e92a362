"""A mistake defined once is named in every exercise where it can be made.

A catalogue entry whose ``code`` is a table loads as one mistake per exercise, sharing the
id, title and hint. A handful of representative siblings, each pasted into the released
notebook (as the corpus does), must be named with that one id by the grader's diagnosis,
and a correct notebook must get no name at all.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from attnkit.diagnosis import RecordingImplementation, quiet
from attnkit.implementation import LocalImplementation
from attnkit.notebook_run import load_definitions
from attnkit_autograder.authoring.corpus import CorpusCase, case_notebook, read_case, write_notebook
from attnkit_autograder.grading.catalogue import expand, load_mistakes
from attnkit_autograder.grading.explain import explain_failures
from attnkit_autograder.grading.harness import reference_implementation, run_suite
from attnkit_autograder.grading.scoring import score_cells

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "mistakes"

SIBLINGS = [
    "x2_v2_unscaled",  # no_scaling, defined with lesson 1's self_attention
    "l3_sdpa_by_dk",  # divide_by_dk
    "l3_sdpa_inverted",  # inverted_mask, defined with CausalAttention
    "l4_mha_columns",  # softmax_wrong_dim
    "x3_causal_swapped_projections",  # queries_keys_swapped
    "l4_mha_dropout_context",  # dropout_on_output
]


def graded(case: CorpusCase, folder: Path) -> list[dict[str, Any]]:
    """The graded cells of the case's notebook, with the grader's diagnosis."""
    path = write_notebook(case_notebook(case, ROOT / "assignments"), folder / f"{case.name}.ipynb")
    with contextlib.redirect_stdout(io.StringIO()), quiet():
        namespace, _, _ = load_definitions(path)
    recorder = RecordingImplementation(LocalImplementation(namespace, case.name))
    with quiet():
        verdicts = run_suite(recorder, case.slug, reference_implementation(case.slug))
        tests = score_cells(case.slug, verdicts)
        explain_failures(case.slug, tests, recorder.calls)
    return tests


def test_a_code_table_is_one_mistake_per_exercise_with_one_name() -> None:
    entry = {
        "id": "no_scaling",
        "title": "no scaling",
        "symptom": "peaked",
        "hint": "scale",
        "family": {"d": [1, 2]},
        "code": {"a/x": "return $d\n", "b/y": "return 0\n"},
    }
    x, y = expand(entry)
    assert (x.key, y.key) == ("a/x/no_scaling", "b/y/no_scaling")
    assert x.hint == y.hint and x.title == y.title
    assert x.programs() == ["return 1", "return 2"]
    assert y.programs() == ["return 0"]  # a placeholder a body does not use adds nothing


def test_sibling_exercises_share_the_mistake() -> None:
    sites = {(m.assignment, m.exercise) for m in load_mistakes() if m.id == "no_scaling"}
    assert ("02_self_attention", "SelfAttention_v2") in sites
    assert ("03_causal_attention", "ScaledDotProductAttention") in sites
    assert ("04_multihead_attention", "MultiHeadAttention") in sites
    titles = {m.title for m in load_mistakes() if m.id == "inverted_mask"}
    assert len(titles) == 1


@pytest.mark.parametrize("name", SIBLINGS)
def test_the_grader_names_the_mistake_in_a_sibling_exercise(name: str, tmp_path: Path) -> None:
    case = read_case(CORPUS / f"{name}.py")
    assert case.expected is not None
    exercise, mistake = case.expected
    names = {
        (t["exercise"], t["diagnosis"]["id"]) for t in graded(case, tmp_path) if t["diagnosis"]
    }
    assert names == {(exercise, mistake)}


def test_a_correct_notebook_gets_no_name(tmp_path: Path) -> None:
    case = CorpusCase("correct", "04_multihead_attention", "correct", {})
    tests = graded(case, tmp_path)
    assert all(t["status"] == "passed" for t in tests)
    assert not any(t["diagnosis"] or t["hint"] for t in tests)
