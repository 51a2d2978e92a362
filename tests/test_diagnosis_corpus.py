"""The diagnosis on an independent corpus: buggy answers written apart from the catalogue.

``tests/corpus/mistakes/`` holds one submission per file (see attnkit_autograder.authoring.corpus):
every catalogued mistake written at least once in a style unlike the catalogue's code,
realistic mistakes the catalogue does not hold, and correct answers in unusual styles.
Both the grader's diagnosis and the notebook self-check are measured, and the rates are
printed. A wrong name is worse than none, so the bar is: at least 95% of catalogued
mistakes named, no wrong name anywhere, and no hint at all on correct code.

The grader's diagnosis runs in this process (the hidden suite against a
LocalImplementation of the submission's definitions), so it measures the diagnosis,
not the sandbox.
"""

from __future__ import annotations

import contextlib
import functools
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from attnkit.assignments import ASSIGNMENTS
from attnkit.diagnosis import (
    FORBIDDEN_CALL,
    RecordingImplementation,
    agree,
    as_answer,
    load_fingerprints,
    quiet,
)
from attnkit.implementation import LocalImplementation
from attnkit.notebook_run import load_definitions
from attnkit.selfcheck import run_exercise
from attnkit_autograder.authoring.corpus import (
    CorpusCase,
    case_notebook,
    catalogue_cases,
    read_case,
    write_notebook,
)
from attnkit_autograder.grading.catalogue import load_mistakes
from attnkit_autograder.grading.explain import explain_failures
from attnkit_autograder.grading.harness import reference_implementation, run_suite
from attnkit_autograder.grading.scoring import score_cells

ROOT = Path(__file__).resolve().parents[1]
CORPUS = sorted((ROOT / "tests" / "corpus" / "mistakes").glob("*.py"))
CATALOGUE = {(m.assignment, m.exercise, m.id) for m in load_mistakes()}


@functools.cache
def cases() -> tuple[CorpusCase, ...]:
    """The corpus's files, and the catalogue's student-style cases."""
    return (*(read_case(path) for path in CORPUS), *catalogue_cases())


def namespace_of(case: CorpusCase, folder: Path) -> dict[str, Any]:
    path = write_notebook(case_notebook(case, ROOT / "assignments"), folder / f"{case.name}.ipynb")
    with contextlib.redirect_stdout(io.StringIO()), quiet():
        namespace, _, _ = load_definitions(path)
    return namespace


def grade_in_process(case: CorpusCase, namespace: dict[str, Any]) -> list[dict[str, Any]]:
    """The graded cells, with the grader's diagnosis, as grades.json would hold them."""
    recorder = RecordingImplementation(LocalImplementation(namespace, case.name))
    with quiet():
        verdicts = run_suite(recorder, case.slug, reference_implementation(case.slug))
        tests = score_cells(case.slug, verdicts)
        explain_failures(case.slug, tests, recorder.calls)
    return tests


def self_check(case: CorpusCase, namespace: dict[str, Any]) -> dict[str, list[Any]]:
    impl = LocalImplementation(namespace, case.name)
    with contextlib.redirect_stdout(io.StringIO()), quiet():
        return {
            e.name: run_exercise(impl, case.slug, e.name) for e in ASSIGNMENTS[case.slug].exercises
        }


@dataclass
class Tally:
    named: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    hinted_correct: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)
    catalogued: int = 0
    correct: int = 0

    def report(self, who: str) -> str:
        rate = 100 * len(self.named) / max(self.catalogued, 1)
        return (
            f"{who}: named correctly {len(self.named)}/{self.catalogued} ({rate:.0f}%), "
            f"named wrongly {len(self.wrong)}, not named {len(self.missed)}, "
            f"hints on correct code {len(self.hinted_correct)}/{self.correct}"
            + (f", not seen by these checks {len(self.unseen)}" if self.unseen else "")
            + "".join(f"\n  wrong: {w}" for w in self.wrong)
            + "".join(f"\n  not named: {m}" for m in self.missed)
            + "".join(f"\n  hint on correct code: {h}" for h in self.hinted_correct)
        )


def judge(
    tally: Tally, case: CorpusCase, names: dict[str, set[str]], hinted: bool, seen: bool = True
) -> None:
    """Score one case: ``names`` per exercise (mistake ids), ``hinted`` any hint at all.
    A catalogued mistake the checks could not see (``seen=False``) is left out of the
    naming rate, but a wrong name on it still counts."""
    expected = case.expected
    given = {(exercise, name) for exercise, ids in names.items() for name in ids}
    wrong = given - ({expected} if expected else set())
    if wrong:
        tally.wrong.append(f"{case.name}: {sorted(wrong)}")
    if case.expect == "correct":
        tally.correct += 1
        if hinted:
            tally.hinted_correct.append(case.name)
    if expected is not None and not seen:
        tally.unseen.append(case.name)
    if expected is not None and seen:
        tally.catalogued += 1
        (tally.named if expected in given else tally.missed).append(case.name)


def test_the_corpus_is_well_formed() -> None:
    """Enough cases of each kind, every expected mistake in the catalogue, every catalogued
    mistake written at least once."""
    expected = {(c.slug, *c.expected) for c in cases() if c.expected}
    assert expected <= CATALOGUE
    assert expected >= CATALOGUE, f"not in the corpus: {sorted(CATALOGUE - expected)}"
    assert len(cases()) >= 60
    assert sum(c.expect == "none" for c in cases()) >= 20
    assert sum(c.expect == "correct" for c in cases()) >= 4


@pytest.fixture(scope="module")
def namespaces(tmp_path_factory) -> dict[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("corpus")
    return {case.name: namespace_of(case, folder) for case in cases()}


@pytest.mark.slow
def test_the_grader_names_only_what_the_evidence_singles_out(namespaces) -> None:
    tally, unfair = Tally(), []
    for case in cases():
        tests = grade_in_process(case, namespaces[case.name])
        names: dict[str, set[str]] = {}
        for test in tests:
            if test["diagnosis"]:
                names.setdefault(test["exercise"], set()).add(test["diagnosis"]["id"])
        if (case.expect == "correct") != all(t["status"] == "passed" for t in tests):
            unfair.append(case.name)  # a correct case lost points, or a buggy one lost none
        judge(tally, case, names, any(t["hint"] or t["diagnosis"] for t in tests))
    print("\n" + tally.report("grader"))
    assert unfair == []
    assert tally.wrong == [] and tally.hinted_correct == []
    assert len(tally.named) >= 0.95 * tally.catalogued


@pytest.mark.slow
def test_the_self_check_names_what_visible_checks_can_see(namespaces) -> None:
    """Counted among the catalogued cases: those whose mistake fails a visible check, both
    as the catalogue writes it and as the corpus does."""
    visible = visible_mistakes()
    tally = Tally()
    for case in cases():
        results = self_check(case, namespaces[case.name])
        titles = {(m.assignment, m.exercise, m.title): m.id for m in load_mistakes()}
        names = {
            exercise: {titles[(case.slug, exercise, r.diagnosis)] for r in rs if r.diagnosis}
            for exercise, rs in results.items()
        }
        failing = {e for e, rs in results.items() if any(r.status != "passed" for r in rs)}
        seen = case.expected is None or (
            (case.slug, *case.expected) in visible and case.expected[0] in failing
        )
        hinted = any(r.hint or r.diagnosis for rs in results.values() for r in rs)
        judge(tally, case, names, hinted, seen)
        if case.expect == "correct":
            assert not failing, f"{case.name} fails visible checks: {failing}"
    print("\n" + tally.report("self-check"))
    assert tally.wrong == [] and tally.hinted_correct == []
    assert len(tally.named) >= 0.95 * tally.catalogued


def visible_mistakes() -> set[tuple[str, str, str]]:
    """Catalogued mistakes that some visible check tells apart from the correct answer (a
    forbidden call is seen at runtime by any check that calls the exercise)."""
    prints = load_fingerprints()
    seen = set()
    for mistake in prints.mistakes:
        correct = prints.correct[f"{mistake.assignment}/{mistake.exercise}"]
        if mistake.evidence == FORBIDDEN_CALL or any(
            not agree(as_answer(program[key]), as_answer(answer))
            for program in mistake.programs
            for key, answer in correct.items()
        ):
            seen.add((mistake.assignment, mistake.exercise, mistake.id))
    return seen


def test_a_grader_names_the_same_mistakes_from_its_memory_of_replays(tmp_path, monkeypatch) -> None:
    """The replays a grader remembers across submissions (catalogue.Replays) name exactly
    what fresh replays name, and a submission asked the same calls replays nothing."""
    from attnkit_autograder.grading import catalogue

    picked = [c for c in cases() if c.slug == "02_self_attention"][:6]
    assert picked, "the corpus has lesson-2 mistakes"
    recorded = []
    for case in picked:
        namespace = namespace_of(case, tmp_path)
        recorder = RecordingImplementation(LocalImplementation(namespace, case.name))
        with quiet():
            tests = score_cells(
                case.slug, run_suite(recorder, case.slug, reference_implementation(case.slug))
            )
        recorded.append((case.slug, tests, recorder.calls))

    def names() -> list[Any]:
        found = []
        for slug, tests, calls in recorded:
            fresh = [dict(test) for test in tests]
            with quiet():
                explain_failures(slug, fresh, calls)
            found.append([t.get("diagnosis") for t in fresh])
        return found

    monkeypatch.setattr(catalogue.Replays, "_answers", {})
    monkeypatch.setattr(catalogue.Replays, "_programs", {})
    cold = names()
    assert any(any(d is not None for d in case) for case in cold)
    replayed = []
    monkeypatch.setattr(catalogue, "replay", lambda ns, call: replayed.append(call) or None)
    assert names() == cold
    assert replayed == []
