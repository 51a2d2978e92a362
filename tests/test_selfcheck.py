"""The in-notebook helper and the self-check's verdicts."""

from __future__ import annotations

import numpy as np
import pytest

from attnkit.implementation import LocalImplementation
from attnkit.notebook import Lesson
from attnkit.selfcheck.runner import FORBIDDEN, NOT_IMPLEMENTED, PASSED, run_exercise
from attnkit_solutions.exercises import reference_namespace


def test_check_prints_short_not_implemented_line(capsys) -> None:
    def softmax(x, axis=-1):
        raise NotImplementedError()

    assert Lesson("01_numpy_attention").check(softmax) is None
    out = capsys.readouterr().out
    assert (
        out.strip()
        == "softmax: not implemented yet. Fill in its cell, run it, then run this check again."
    )


def test_check_names_failures_with_hints_and_never_calls_it_a_grade(capsys) -> None:
    def softmax(x, axis=-1):
        exps = np.exp(x)
        return exps / exps.sum(axis=-1, keepdims=True)

    with np.errstate(over="ignore", invalid="ignore"):
        Lesson("01_numpy_attention").check(softmax)
    out = capsys.readouterr().out
    assert "[FAILED] stays finite for logits around +-1000" in out
    assert "hint:" in out and "NaN" in out
    assert "[FAILED] respects the axis argument" in out
    assert "grade" not in out.lower() or "hidden tests" in out


def test_passing_check_says_it_is_not_the_grade(capsys) -> None:
    def scale_scores(scores, d_k):
        return scores / d_k**0.5

    Lesson("01").check(scale_scores)
    out = capsys.readouterr().out
    assert "2 of 2 visible checks pass" in out and "hidden tests" in out


def test_demo_turns_not_implemented_into_one_line(capsys) -> None:
    def causal_mask(num_tokens):
        raise NotImplementedError()

    with Lesson("01").demo():
        causal_mask(3)
    assert capsys.readouterr().out.strip() == (
        "(demo skipped: causal_mask is not implemented yet; it will run once it is)"
    )


def test_forbidden_library_softmax_is_reported(capsys) -> None:
    import torch

    namespace = {"softmax": lambda x, dim=-1: torch.nn.functional.softmax(x, dim=dim)}
    results = run_exercise(LocalImplementation(namespace), "02_self_attention", "softmax")
    assert {r.status for r in results} == {FORBIDDEN}
    assert "torch.nn.functional.softmax" in results[0].message


def test_infinite_loop_times_out_instead_of_hanging() -> None:
    def scale_scores(scores, d_k):
        while True:
            pass

    results = run_exercise(
        LocalImplementation({"scale_scores": scale_scores}),
        "01_numpy_attention",
        "scale_scores",
        timeout_s=0.5,
    )
    assert results[0].status == "timeout"
    assert "CPU" in results[0].message and "loop" in results[0].hint


def test_waiting_code_is_told_apart_from_a_loop() -> None:
    import time

    from attnkit.selfcheck.runner import CheckTimeout, time_limit, timeout_outcome, visible_checks

    with pytest.raises(CheckTimeout) as stopped, time_limit(0.2, waiting=1.0):
        time.sleep(30)
    check = visible_checks("01_numpy_attention", "scale_scores")[0]
    told = timeout_outcome("scale_scores", check, stopped.value)
    assert told.status == "timeout"
    assert "waiting" in told.message and "loop" not in told.hint


def test_a_check_is_never_stopped_halfway_through_an_import(tmp_path, monkeypatch) -> None:
    """The first call of a check may import (here 0.4 s of CPU, over the 0.3 s limit): the
    import finishes whole, and the check is run again, now without it, and passes."""
    import sys

    (tmp_path / "slow_helper.py").write_text(
        "import time\nstart = time.process_time()\n"
        "while time.process_time() - start < 0.4:\n    pass\nDONE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "slow_helper", raising=False)

    def scale_scores(scores, d_k):
        import slow_helper

        assert slow_helper.DONE
        return scores / d_k**0.5

    results = run_exercise(
        LocalImplementation({"scale_scores": scale_scores}),
        "01_numpy_attention",
        "scale_scores",
        timeout_s=0.3,
    )
    assert {r.status for r in results} == {"passed"}, results
    assert sys.modules["slow_helper"].DONE


@pytest.mark.slow
def test_visible_checks_pass_while_other_processes_load_every_core(tmp_path) -> None:
    """A correct notebook's checks pass on a machine four other processes keep busy: a
    check is limited by the CPU time it spends, not by the clock."""
    import subprocess
    import sys

    spin = "import time\nend = time.time() + 120\nwhile time.time() < end: pass"
    others = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(4)]
    try:
        for slug, exercise in (
            ("01_numpy_attention", "softmax"),
            ("02_self_attention", "SelfAttention_v1"),
        ):
            namespace = reference_namespace(slug)
            results = run_exercise(LocalImplementation(namespace), slug, exercise, timeout_s=2.0)
            assert {r.status for r in results} == {"passed"}, results
    finally:
        for other in others:
            other.kill()


def test_stub_and_pass_statuses() -> None:
    def stub(*args, **kwargs):
        raise NotImplementedError()

    results = run_exercise(
        LocalImplementation({"causal_mask": stub}), "01_numpy_attention", "causal_mask"
    )
    assert [r.status for r in results] == [NOT_IMPLEMENTED]
    good = {"causal_mask": lambda n: np.triu(np.ones((n, n), dtype=bool), k=1)}
    assert {
        r.status
        for r in run_exercise(LocalImplementation(good), "01_numpy_attention", "causal_mask")
    } == {PASSED}


def test_check_raises_only_under_nbgrader_validate(monkeypatch, capsys) -> None:
    import pytest

    from attnkit.notebook import SelfCheckFailed

    def causal_mask(num_tokens):
        raise NotImplementedError()

    lesson = Lesson("01_numpy_attention")
    lesson.check(causal_mask)  # working in the notebook: prints, never raises
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    lesson.check(causal_mask)  # autograding: the hidden tests decide
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    with pytest.raises(SelfCheckFailed, match="causal_mask: not implemented"):
        lesson.check(causal_mask)
    good = lambda n: np.triu(np.ones((n, n), dtype=bool), k=1)  # noqa: E731
    good.__name__ = "causal_mask"
    lesson.check(good)  # passing exercises never raise
    assert capsys.readouterr().out.count("not implemented yet") == 3
