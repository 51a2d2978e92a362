"""The released notebooks, the self-check and the hidden suites, checked against each other."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from attnkit import cli
from attnkit.assignments import ASSIGNMENTS
from attnkit.selfcheck.runner import visible_checks
from attnkit_autograder.authoring.corpus import (
    fill_notebook,
    load_mistakes,
    released_notebook,
    write_notebook,
)
from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.grading.harness import reference_implementation, run_suite
from attnkit_autograder.lessons.rubric import load_rubric, source_notebook

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS_DIR = ROOT / "assignments"
SLUGS = list(ASSIGNMENTS)


def released(slug: str) -> Path:
    """The lesson as released (as committed, whatever the working tree's copy holds)."""
    return released_path(slug, ASSIGNMENTS_DIR)


def cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.slow
def test_released_notebooks_are_exactly_what_nbgrader_generates() -> None:
    from attnkit_autograder.authoring.released import released_differences

    with tempfile.TemporaryDirectory() as tmp:
        for slug in SLUGS:  # the committed notebooks, whatever the working tree holds
            (Path(tmp) / slug).mkdir()
            shutil.copyfile(released(slug), Path(tmp) / slug / f"{slug}.ipynb")
        assert released_differences(Path(tmp)) == []


@pytest.mark.parametrize("slug", SLUGS)
def test_released_notebooks_hold_no_solution_or_hidden_test(slug: str) -> None:
    text = released(slug).read_text(encoding="utf-8")
    for secret in ("BEGIN SOLUTION", "attnkit_solutions", "HIDDEN TESTS", "run_hidden_tests"):
        assert secret not in text, secret
    stubs = [c for c in cells(released(slug)) if c["metadata"].get("nbgrader", {}).get("solution")]
    assert len(stubs) == len(ASSIGNMENTS[slug].exercises)
    for stub in stubs:
        source = "".join(stub["source"])
        assert "raise NotImplementedError()" in source and '"""' in source, "stub with a contract"


def test_design_card_names_exist_as_stubs() -> None:
    sources = {slug: "".join("".join(c["source"]) for c in cells(released(slug))) for slug in SLUGS}
    assert "def softmax(" in sources["01_numpy_attention"]
    assert "def scale_scores(" in sources["01_numpy_attention"]
    assert "def causal_mask(" in sources["03_causal_attention"]
    v1 = sources["02_self_attention"]
    assert "class SelfAttention_v1" in v1 and "def forward(self, x" in v1


@pytest.mark.parametrize("slug", SLUGS)
def test_every_exercise_has_visible_checks_and_every_graded_cell_hidden_tests(slug) -> None:
    for exercise in ASSIGNMENTS[slug].exercises:
        assert visible_checks(slug, exercise.name), exercise.name
    reference = reference_implementation(slug)
    verdicts = run_suite(reference, slug, reference)
    assert {v.grade_id for v in verdicts} == set(load_rubric(slug))
    assert all(v.status == "passed" for v in verdicts)
    solution_ids = {
        c["metadata"]["nbgrader"]["grade_id"]
        for c in cells(source_notebook(slug))
        if c["metadata"].get("nbgrader", {}).get("solution")
    }
    assert solution_ids == {e.name for e in ASSIGNMENTS[slug].exercises}


def run_check(notebook: Path, capsys) -> tuple[int, str]:
    code = cli.main(["check", "--notebook", str(notebook)])
    return code, capsys.readouterr().out


def row_status(output: str, exercise: str) -> str:
    for line in output.splitlines():
        parts = line.split()
        if parts and parts[0] == exercise:
            return " ".join(parts[1:])
    raise AssertionError(f"no row for {exercise} in:\n{output}")


@pytest.mark.parametrize("slug", SLUGS)
def test_check_passes_notebooks_filled_with_the_references(slug, tmp_path, capsys) -> None:
    notebook = write_notebook(
        fill_notebook(released_notebook(slug, ASSIGNMENTS_DIR), slug), tmp_path / f"{slug}.ipynb"
    )
    code, out = run_check(notebook, capsys)
    assert code == 0, out
    for exercise in ASSIGNMENTS[slug].exercises:
        assert row_status(out, exercise.name).startswith("passed"), out
    assert "not your grade" not in out.lower() or "hidden tests" in out


@pytest.mark.parametrize("slug", SLUGS)
def test_check_reports_stubs_as_not_implemented(slug, capsys) -> None:
    code, out = run_check(released(slug), capsys)
    assert code == 1
    for exercise in ASSIGNMENTS[slug].exercises:
        assert row_status(out, exercise.name) == "not implemented", out


def first_mistake_per_exercise():
    seen = {}
    for mistake in load_mistakes():
        seen.setdefault((mistake.assignment, mistake.exercise), mistake)
    return list(seen.values())


@pytest.mark.parametrize("mistake", first_mistake_per_exercise(), ids=lambda m: m.key)
def test_check_fails_exactly_the_exercise_with_a_wrong_variant(mistake, tmp_path, capsys) -> None:
    slug = mistake.assignment
    notebook = write_notebook(
        fill_notebook(
            released_notebook(slug, ASSIGNMENTS_DIR), slug, {mistake.exercise: mistake.code}
        ),
        tmp_path / f"{slug}.ipynb",
    )
    code, out = run_check(notebook, capsys)
    assert code == 1, out
    dependents = ASSIGNMENTS[slug].dependents(mistake.exercise)
    for exercise in ASSIGNMENTS[slug].exercises:
        status = row_status(out, exercise.name)
        if exercise.name == mistake.exercise:
            assert not status.startswith("passed"), out
        elif exercise.name not in dependents:  # those may fail too: they call the wrong code
            assert status.startswith("passed"), f"{exercise.name}: {out}"


def test_every_exercise_has_at_least_one_catalogued_mistake() -> None:
    covered = {(m.assignment, m.exercise) for m in load_mistakes()}
    for slug, assignment in ASSIGNMENTS.items():
        for exercise in assignment.exercises:
            assert (slug, exercise.name) in covered, exercise.name
