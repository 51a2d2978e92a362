"""Who is at fault: a student is never blamed for the grader, nor the grader for the student.

A hidden test whose own code raises while it reads what a submission returned (a list
where an array belongs) is that test's failure, with a message for the student, when the
reference passes the same test; only a test that fails for the reference too is the
grader's fault, recorded as such and never scored as the student's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attnkit.outcome import FAILED, INTERNAL, Outcome
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.grading import harness
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings, grade_submission
from attnkit_autograder.grading.submission import Submission

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"
SETTINGS = GradeSettings(GradeOptions(timeout=10.0, cell_timeout=10.0, budget=90.0))


def graded(tmp_path: Path, body: str) -> dict:
    notebook = fill_notebook(
        released_notebook(SLUG, ROOT / "assignments"), SLUG, {"self_attention": body}
    )
    path = write_notebook(notebook, tmp_path / f"lee_{SLUG}.ipynb")
    return grade_submission(Submission("lee", SLUG, path), SETTINGS)


@pytest.mark.slow
def test_a_context_returned_as_a_list_costs_only_its_exercise(tmp_path: Path) -> None:
    """The permutation test indexes the returned context as an array: a list there used to
    raise inside the grader and turn the whole notebook into an error (0 points)."""
    record = graded(tmp_path, "return [[1.0], [2.0]], [[1.0], [1.0]]")
    assert record["status"] == "graded" and "fault" not in record, record.get("error")
    lost = {t["exercise"] for t in record["tests"] if t["status"] != "passed"}
    assert lost == {"self_attention"}
    assert record["score"] == record["max_score"] - sum(
        t["max_points"] for t in record["tests"] if t["exercise"] == "self_attention"
    )


def test_an_exception_judging_values_the_reference_passes_is_the_tests_failure() -> None:
    reference = harness.reference_implementation(SLUG)
    passing = "test_self_attention_is_permutation_equivariant"
    assert passing not in harness.reference_failures(SLUG, reference)
    raised = Outcome("", passing, INTERNAL, "the grader failed: KeyError: 'array'", None,
                     grade_id="test_self_attention")  # fmt: skip
    judged = harness.attribute_fault(raised, SLUG, reference)
    assert judged.status == FAILED and judged.grade_id == "test_self_attention"
    assert "self_attention returned could not be checked (KeyError: 'array')" in judged.message


def test_a_test_the_reference_fails_too_stays_the_graders_fault(monkeypatch) -> None:
    reference = harness.reference_implementation(SLUG)
    broken = "test_self_attention_is_permutation_equivariant"
    monkeypatch.setitem(harness._reference_failures, SLUG, frozenset({broken}))
    raised = Outcome("", broken, INTERNAL, "the grader failed: KeyError: 'array'", None,
                     grade_id="test_self_attention")  # fmt: skip
    assert harness.attribute_fault(raised, SLUG, reference) == raised


def test_a_sandbox_that_cannot_lend_a_worker_is_the_graders_fault(tmp_path, monkeypatch) -> None:
    """A sandbox that dies before the submission's code runs (a kit module that fails to
    import in it, a killed zygote) is never scored as the student's 0: the submission is
    refused as the grader's fault, which a rerun grades again."""
    from attnkit_autograder.sandbox import zygote

    def dies(self, limits):
        raise zygote.SandboxDied("the sandbox exited")

    monkeypatch.setattr(zygote.Zygote, "spawn", dies)
    record = graded(tmp_path, "raise NotImplementedError")
    assert record["status"] == "error" and record.get("fault") == "grader", record
    assert "the grading sandbox failed (the sandbox exited)" in record["error"]


def test_a_worker_that_dies_before_it_is_ready_is_the_graders_fault(tmp_path, monkeypatch) -> None:
    """A worker that ends before it says it is ready has run no notebook code (the kit's
    start failed, or the machine killed it): the grader's fault, never a graded 0."""
    from attnkit_autograder.sandbox import channel
    from attnkit_autograder.sandbox.errors import WorkerCrashed

    receive = channel.Channel.receive

    def dies_starting(self, deadline, doing, *args, **kwargs):
        if doing == "starting":
            raise WorkerCrashed("the submission's process exited while starting")
        return receive(self, deadline, doing, *args, **kwargs)

    monkeypatch.setattr(channel.Channel, "receive", dies_starting)
    record = graded(tmp_path, "raise NotImplementedError")
    assert record["status"] == "error" and record.get("fault") == "grader", record
    assert "exited while starting" in record["error"]
