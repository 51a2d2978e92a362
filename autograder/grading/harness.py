"""Run a hidden suite against one implementation and collect a verdict per test.

The suites are ordinary pytest files, collected by pytest once per process
(:func:`hidden_tests`). Each test takes ``submission`` and, if it compares, ``reference``:
:class:`Subject` objects with a ``probe(exercise)`` method (see
:class:`attnkit.probe.Probe`). Every test is tagged with the nbgrader grade id whose
points it contributes to:

    @grade("test_softmax_values")
    def test_rows_sum_to_one(submission, reference): ...

Verdict messages are built from the exception a test raised, never from pytest's own
report (which would quote the hidden test's source).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import io
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from attnkit.adapters import MissingDefinition
from attnkit.assignments import ASSIGNMENTS
from attnkit.compare import CheckFailed
from attnkit.implementation import Implementation, LocalImplementation
from attnkit.outcome import ERROR, FAILED, FORBIDDEN, INTERNAL, PASSED, TIMEOUT, Outcome
from attnkit.probe import Probe
from attnkit.selfcheck.runner import describe_error
from attnkit.student_process.wire import encode

from .. import lessons
from ..lessons import LESSONS
from ..lessons.rubric import graded_cells
from ..sandbox.errors import SubmissionError, WorkerCrashed, WorkerTimeout
from .withholding import test_order


def grade(grade_id: str) -> pytest.MarkDecorator:
    """Mark a hidden test as counting towards the graded cell ``grade_id``."""
    return pytest.mark.grade_id(grade_id)


class Subject:
    """One implementation of one assignment, as the suites see it."""

    def __init__(self, impl: Implementation, slug: str) -> None:
        self.impl = impl
        self.assignment = ASSIGNMENTS[slug]

    def probe(self, exercise: str) -> Probe:
        return Probe(self.impl, self.assignment.exercise(exercise), self.assignment.framework)


def verdict_for(exc: BaseException | None, isolated: bool = False) -> tuple[str, str, str | None]:
    """(status, message, hint) for what a hidden test raised.

    With ``isolated``, student code runs elsewhere and can only reach this process as the
    exceptions below; anything else raised here is a bug in the grader (INTERNAL).
    """
    if exc is None:
        return PASSED, "", None
    if isinstance(exc, CheckFailed):
        return (FORBIDDEN if exc.stage == "forbidden" else FAILED), exc.message, exc.hint
    if isinstance(exc, NotImplementedError):
        return FAILED, "not implemented (the stub still raises NotImplementedError)", None
    if isinstance(exc, MissingDefinition):
        return ERROR, f"{exc}: the submission does not define it", None
    if isinstance(exc, WorkerTimeout):
        return TIMEOUT, str(exc), "Look for a loop that never ends."
    if isinstance(exc, WorkerCrashed):
        return ERROR, str(exc), None
    if isinstance(exc, SubmissionError):
        _, hint = describe_error(exc)
        return ERROR, f"raised {exc}"[:300], hint
    if isolated:
        return INTERNAL, f"the grader failed: {type(exc).__name__}: {exc}"[:300], None
    message, hint = describe_error(exc)
    return ERROR, f"raised {message}", hint


@dataclass(frozen=True)
class HiddenTest:
    """One collected hidden test: its function, its parameters and its graded cell."""

    name: str
    grade_id: str
    function: Callable[..., Any]
    params: Mapping[str, Any]
    wants_reference: bool

    def run(self, submission: Subject, reference: Subject) -> BaseException | None:
        """Call the test; what it raised (None if it passed). KeyboardInterrupt, which
        stops a grader, is not a verdict and goes through."""
        subjects = {"submission": submission}
        if self.wants_reference:
            subjects["reference"] = reference
        try:
            self.function(**subjects, **self.params)
        except (Exception, pytest.fail.Exception, pytest.skip.Exception) as exc:
            return exc
        return None


class _Collector:
    """A pytest plugin that keeps the collected items (run with ``--collect-only``)."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", "grade_id(id): the graded cell a hidden test counts for")

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[Any]) -> None:
        self.items = list(items)


FIXTURES = frozenset({"submission", "reference"})
"""The only fixtures a hidden test may ask for (parameters aside)."""


def suite_arguments(slug: str) -> list[str]:
    """pytest's command line for collecting ``slug``'s hidden suite, quiet and without the
    plugins that only add cost."""
    suite = lessons.folder(slug) / "hidden_tests.py"
    # Plugins that only add cost here: pytest's output is discarded, and
    # unraisableexception runs gc.collect() twice per session.
    quiet = [
        "no:cacheprovider",
        "no:unraisableexception",
        "no:threadexception",
        "no:logging",
        "no:warnings",
        "no:faulthandler",
        "no:doctest",
        "no:junitxml",
        "no:pastebin",
    ]
    # importlib: the lesson folders are packages, and sys.path stays as it is.
    args = [str(suite), "-q", "--rootdir", str(LESSONS), "-c", str(LESSONS / "pytest.ini")]
    args += ["--import-mode=importlib"]
    for plugin_name in quiet:
        args += ["-p", plugin_name]
    return args


@contextlib.contextmanager
def no_plugin_autoload() -> Iterator[None]:
    """Only the plugins the suite names: whatever else is installed (hypothesis, anyio,
    xdist, ...) would be imported and assertion-rewritten at every session, for seconds."""
    before = os.environ.get(AUTOLOAD)
    os.environ[AUTOLOAD] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(AUTOLOAD, None)
        else:
            os.environ[AUTOLOAD] = before


AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"


@functools.cache
def hidden_tests(slug: str) -> tuple[HiddenTest, ...]:
    """``slug``'s hidden suite, collected by pytest once per process (parametrization and
    markers as pytest reads them). Every submission then runs the same collected tests: a
    pytest session per submission cost more than its tests. A test without a graded cell,
    or that asks for a fixture the harness does not give, is a bug in the suite."""
    collector = _Collector()
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        no_plugin_autoload(),
    ):
        code = pytest.main([*suite_arguments(slug), "--collect-only"], plugins=[collector])
    if code != pytest.ExitCode.OK or not collector.items:
        raise RuntimeError(f"the hidden suite for {slug} did not collect (pytest exit code {code})")
    tests = []
    for item in collector.items:
        marker = item.get_closest_marker("grade_id")
        params = dict(getattr(getattr(item, "callspec", None), "params", {}))
        wanted = set(inspect.signature(item.function).parameters) - set(params)
        if marker is None or not wanted <= FIXTURES or "submission" not in wanted:
            raise RuntimeError(
                f"hidden test {item.nodeid} needs a grade_id mark and only the fixtures "
                f"{sorted(FIXTURES)} (it asks for {sorted(wanted)})"
            )
        tests.append(
            HiddenTest(item.name, marker.args[0], item.function, params, "reference" in wanted)
        )
    return tuple(tests)


def run_suite(
    impl: Implementation,
    slug: str,
    reference: Implementation,
    grade_ids: set[str] | None = None,
    first_failure: bool = False,
) -> list[Outcome]:
    """A verdict for each of ``slug``'s hidden tests (those of ``grade_ids``, when given)
    against ``impl``; with ``first_failure``, the verdicts up to the first that does not
    pass (mutation testing needs no more)."""
    isolated = not isinstance(getattr(impl, "inner", impl), LocalImplementation)
    submission, answers = Subject(impl, slug), Subject(reference, slug)
    verdicts = []
    order = test_order(slug)  # one worker's exercises together (see withholding)
    for test in sorted(hidden_tests(slug), key=lambda t: order.get(t.grade_id, 0)):
        if grade_ids is not None and test.grade_id not in grade_ids:
            continue
        status, message, hint = verdict_for(test.run(submission, answers), isolated)
        verdicts.append(Outcome("", test.name, status, message, hint, grade_id=test.grade_id))
        if first_failure and status != PASSED:
            break
    if impl is reference or not isolated:
        return verdicts
    return [attribute_fault(v, slug, reference) for v in verdicts]


CANNOT_READ = (
    "what {exercise} returned could not be checked ({error}): it is not what the docstring "
    "says it returns. Check the type, shape and nesting of its result"
)


def attribute_fault(verdict: Outcome, slug: str, reference: Implementation) -> Outcome:
    """Who is at fault for a hidden test that raised in the grader (INTERNAL).

    The grader's own code raised while judging values the submission returned: a list where
    a tensor belongs, a tuple of the wrong length. If the same test passes for the
    reference, the submission's values caused it, so it is that test's failure, with a
    message for the student. Only a test that fails for the reference too is the grader's.
    """
    if verdict.status != INTERNAL or verdict.check in reference_failures(slug, reference):
        return verdict
    exercise = next(
        (c.exercise for c in graded_cells(slug) if c.grade_id == verdict.grade_id), "it"
    )
    error = verdict.message.removeprefix("the grader failed: ")
    message = CANNOT_READ.format(exercise=exercise, error=error[:120])
    return Outcome("", verdict.check, FAILED, message, None, grade_id=verdict.grade_id)


_reference_failures: dict[str, frozenset[str]] = {}


def reference_failures(slug: str, reference: Implementation) -> frozenset[str]:
    """The hidden tests of ``slug`` that the reference itself does not pass (none, unless
    the kit is broken): computed once per grader process, when first needed."""
    if slug not in _reference_failures:
        verdicts = run_suite(reference, slug, reference)
        _reference_failures[slug] = frozenset(v.check for v in verdicts if v.status != PASSED)
    return _reference_failures[slug]


class CachedImplementation:
    """An implementation whose answers never change (the reference), remembered per request.

    Every submission is checked on the same inputs, so the reference's answers are
    computed once per grader process instead of once per submission. Failures are not
    cached: they raise again. Inside :meth:`one_submission` (inputs of one student's own),
    new answers are kept only until the block ends, so memory stays flat over a class.
    """

    def __init__(self, inner: LocalImplementation) -> None:
        self.inner = inner
        self.label = inner.label
        self.namespace = inner.namespace
        self._answers: dict[bytes, dict[str, Any]] = {}
        self._scratch: dict[bytes, dict[str, Any]] | None = None

    def run(self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any) -> dict:
        key = hashlib.sha256(encode([adapter, list(forbidden), kwargs])).digest()
        if key in self._answers:
            return self._answers[key]
        kept = self._answers if self._scratch is None else self._scratch
        if key not in kept:
            kept[key] = self.inner.run(adapter, forbidden=forbidden, **kwargs)
        return kept[key]

    @contextlib.contextmanager
    def one_submission(self) -> Iterator[None]:
        """Answers first computed inside this block are forgotten when it ends (those of
        inputs every submission shares stay remembered)."""
        self._scratch = {}
        try:
            yield
        finally:
            self._scratch = None

    def remembered(self) -> int:
        """How many answers are remembered now."""
        return len(self._answers) + len(self._scratch or {})


@functools.cache
def reference_implementation(slug: str) -> CachedImplementation:
    from attnkit_solutions.exercises import reference_namespace

    return CachedImplementation(LocalImplementation(reference_namespace(slug), label="reference"))
