"""Mutation testing of the hidden suites: does every plausible wrong variant fail?

For every exercise, :mod:`.mutation_operators` rewrites one node of the reference at a
time (a swapped axis, an off-by-one bound, ``triu`` for ``tril``, a dropped subtraction,
an inverted mask, a different local returned ...). Each mutant is compiled in the
reference module's globals, put in place of the reference in the lesson's namespace, and
graded by the lesson's hidden suite through the grader's own
:func:`attnkit_autograder.grading.harness.run_suite`: only the tests of the mutated exercise. A
mutant is *killed* when any hidden test does not pass; a killed mutant's remaining tests
are not run.

A survivor that agrees with the reference on fresh random inputs
(:mod:`.equivalence`, the requests of each lesson's ``mutation.py``) is listed as *likely
equivalent*; each lesson's ``mutation.JUDGED`` holds those a human has judged, with the
reason. Every other survivor is a gap in the
suite.

:mod:`.clause_mutants` adds, per exercise, one mutant for each clause of its contract that
can be broken without changing a value (an input modified, a dtype, a device, a kept tensor
left attached): the report lists the clauses each suite checks, and a clause mutant that
survives is a gap, never equivalent.

    python -m attnkit_autograder.quality.mutation [slug ...]
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from typing import Any

from attnkit.assignments import ASSIGNMENTS
from attnkit.implementation import LocalImplementation
from attnkit.outcome import PASSED
from attnkit_solutions.exercises import declarations, reference_namespace, reference_object

from ..grading.harness import reference_implementation, run_suite
from ..lessons.rubric import graded_cells
from .clause_mutants import clause_mutants
from .equivalence import agrees, known_equivalent
from .mutation_operators import Mutant, mutants


@dataclass
class LessonScore:
    slug: str
    generated: int = 0
    killed: list[Mutant] = field(default_factory=list)
    survived: list[Mutant] = field(default_factory=list)
    equivalent: list[tuple[Mutant, str]] = field(default_factory=list)
    """Survivors judged equivalent to the reference (a lesson's ``mutation.JUDGED``), and why."""
    unjudged: list[Mutant] = field(default_factory=list)
    """Survivors that agree with the reference on random inputs, not judged yet."""
    clauses: list[tuple[Mutant, bool]] = field(default_factory=list)
    """Each clause mutant, and whether the suite killed it (checks its clause)."""

    @property
    def score(self) -> float:
        judged = len(self.killed) + len(self.survived)
        return len(self.killed) / judged if judged else 1.0


def mutant_namespace(mutant: Mutant) -> dict[str, Any] | None:
    """The lesson's reference namespace with the mutated definition in place (None when
    the mutant does not compile)."""
    namespace = reference_namespace(mutant.slug)
    target = namespace[mutant.exercise]
    original = reference_object(mutant.slug, mutant.exercise)
    if mutant.wrap is not None:  # a clause mutant: the reference's own code, one promise broken
        function = mutant.wrap(target.forward if inspect.isclass(target) else target)
    else:
        globals_ = {**original.__globals__, **namespace}
        try:
            exec(compile(mutant.source, f"<mutant {mutant.exercise}>", "exec"), globals_)
        except Exception:
            return None
        function = globals_[original.__name__]
    if inspect.isclass(target):
        namespace[mutant.exercise] = type(mutant.exercise, (target,), {"forward": function})
    else:
        namespace[mutant.exercise] = function
    return namespace


# -- grading mutants -------------------------------------------------------------------------------


def grade_ids(slug: str, exercise: str, only: set[str] | None = None) -> set[str]:
    """The graded cells of ``exercise`` (those in ``only``, when given)."""
    found = {cell.grade_id for cell in graded_cells(slug) if cell.exercise == exercise}
    return found if only is None else found & only


def killed_mutants(
    namespaces: dict[str, dict[str, Any]], slug: str, exercise: str, only: set[str] | None
) -> set[str]:
    """The keys of ``namespaces`` that the hidden tests of ``exercise`` (those of the
    graded cells in ``only``, when given) fail, each graded by the grader's own
    :func:`run_suite` up to its first failing test."""
    wanted = grade_ids(slug, exercise, only)
    if not wanted:
        return set()
    reference = reference_implementation(slug)
    killed = set()
    for key, namespace in namespaces.items():
        impl = LocalImplementation(namespace, label=key)
        verdicts = run_suite(impl, slug, reference, grade_ids=wanted, first_failure=True)
        if any(v.status != PASSED for v in verdicts):
            killed.add(key)
    return killed


def exercises(slug: str) -> list[str]:
    return [e.name for e in ASSIGNMENTS[slug].exercises if (slug, e.name) in declarations()]


def score_lesson(
    slug: str, only: set[str] | None = None, exercise_only: str | None = None
) -> LessonScore:
    """Generate every mutant of the lesson (of ``exercise_only``, when given) and grade each
    with its hidden suite (only the tests of the graded cells in ``only``, when given: a
    deliberately weaker suite)."""
    result = LessonScore(slug)
    for exercise in exercises(slug):
        if exercise_only not in (None, exercise):
            continue
        everyone = [*mutants(slug, exercise), *clause_mutants(slug, exercise)]
        built = {str(i): (m, mutant_namespace(m)) for i, m in enumerate(everyone)}
        namespaces = {k: ns for k, (_, ns) in built.items() if ns is not None}
        result.generated += len(namespaces)
        dead = killed_mutants(namespaces, slug, exercise, only)
        for key, namespace in namespaces.items():
            mutant = built[key][0]
            if mutant.clause:
                result.clauses.append((mutant, key in dead))
            if key in dead:
                result.killed.append(mutant)
            elif mutant.clause:  # a broken promise is never equivalent: a gap in the suite
                result.survived.append(mutant)
            elif (
                key := (slug, exercise, mutant.statement, mutant.description)
            ) in known_equivalent():
                result.equivalent.append((mutant, known_equivalent()[key]))
            elif agrees(slug, exercise, reference_namespace(slug), namespace):
                result.unjudged.append(mutant)
            else:
                result.survived.append(mutant)
    return result


def report(result: LessonScore) -> str:
    """The lesson's score, then every survivor and every equivalent mutant, one a line."""
    likely = len(result.equivalent) + len(result.unjudged)
    lines = [
        f"{result.slug}: {result.generated} mutants, {len(result.killed)} killed, "
        f"{len(result.survived)} survived, {likely} likely equivalent, "
        f"score {result.score:.1%}"
    ]
    checked = sum(killed for _, killed in result.clauses)
    lines.append(f"  contract clauses checked: {checked} of {len(result.clauses)}")
    by_exercise: dict[str, list[str]] = {}
    for mutant, killed in result.clauses:
        by_exercise.setdefault(mutant.exercise, []).append(
            mutant.clause if killed else f"{mutant.clause} (UNCHECKED)"
        )
    lines += [f"    {exercise}: {', '.join(names)}" for exercise, names in by_exercise.items()]
    rows = [("SURVIVED", m, "") for m in result.survived]
    rows += [
        ("LIKELY EQUIVALENT", m, " (agrees on random inputs; not judged)") for m in result.unjudged
    ]
    rows += [("EQUIVALENT", m, f" ({why})") for m, why in result.equivalent]
    for label, m, why in rows:
        lines.append(f"  {label:<17} {m.exercise} line {m.line}: {m.description}{why}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Print each lesson's mutation score; exit 1 when a non-equivalent mutant survives."""
    slugs = (sys.argv[1:] if argv is None else argv) or list(ASSIGNMENTS)
    survivors = 0
    for slug in slugs:
        result = score_lesson(slug)
        survivors += len(result.survived)
        print(report(result), flush=True)
    return 1 if survivors else 0


if __name__ == "__main__":
    raise SystemExit(main())
