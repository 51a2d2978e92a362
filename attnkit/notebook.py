"""Helpers used inside the lesson notebooks.

    from attnkit.notebook import Lesson
    lesson = Lesson("01_numpy_attention")
    ...
    lesson.check(softmax)          # after an exercise: prints what passed, what failed, hints
    lesson.hint(softmax)           # stuck: the next rung of the hint ladder (attnkit.hints)
    with lesson.demo():            # around demo code that calls an exercise
        print(softmax(scores))

Each check is added to the learner's progress record (attnkit.progress; ``attnkit progress``
shows it).

Neither ever raises for an exercise that is not done yet: a fresh notebook runs top to
bottom and prints one short line per unfinished exercise instead of a traceback.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import io
import os
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from . import progress
from .assignments import get_assignment
from .implementation import LocalImplementation
from .outcome import Outcome
from .selfcheck import run_exercise
from .selfcheck.report import NOT_A_GRADE, exercise_status, render_exercise


def needs_torch(slug: str) -> str:
    """What a lesson that needs PyTorch says where it is not installed."""
    from .setup_cell import TORCH_REQUIREMENT

    return (
        f"{slug} needs PyTorch, which is not installed here. Run the notebook's first cell "
        f'(it installs what is missing), or: pip install "{TORCH_REQUIREMENT}". '
        "Lesson 1 needs NumPy only."
    )


class SelfCheckFailed(Exception):
    """Raised by ``Lesson.check`` only while nbgrader *validates* the notebook."""


def validating() -> bool:
    """True while nbgrader's Validate runs this notebook (nbgrader sets this variable)."""
    return os.environ.get("NBGRADER_EXECUTION") == "validate"


class Lesson:
    """The helpers of one lesson notebook.

    ``check`` never raises while a student works (so "Run All" always reaches the end) nor
    while nbgrader autogrades (the hidden tests alone decide the grade). Under nbgrader's
    Validate button it raises for an exercise that fails or is not implemented yet, which
    is how Validate reports it.
    """

    def __init__(self, slug: str) -> None:
        self.assignment = get_assignment(slug)
        self.last: dict[str, list[Outcome]] = {}
        """Each exercise's results at its last check, for the hint ladder."""
        self.definitions: dict[str, Any] = {}
        self.failed: dict[str, int] = {}
        """Checks of each exercise that failed in this session."""
        self.ladders: dict[str, Any] = {}
        self.checked: str | None = None
        """The exercise checked last."""
        if self.assignment.framework == "torch" and importlib.util.find_spec("torch") is None:
            print(needs_torch(self.assignment.slug))

    def check(self, exercise: Any, namespace: dict[str, Any] | None = None) -> None:
        """Run the visible checks of one exercise and print the outcome.

        ``exercise`` is the function, class or name of the exercise. The checks look up
        related definitions (e.g. the class a number refers to) in the notebook's
        namespace. Nothing is returned, so a notebook cell shows only the printed report.
        """
        if namespace is None:
            caller = inspect.currentframe().f_back
            namespace = dict(caller.f_globals) if caller is not None else {}
        name = self.exercise_name(exercise, namespace)
        if name is None:
            names = ", ".join(e.name for e in self.assignment.exercises)
            print(f"check() needs an exercise or its name, e.g. one of: {names}")
            return
        if not isinstance(exercise, str):
            namespace[name] = exercise
        try:
            self.assignment.exercise(name)
        except KeyError as exc:
            print(exc.args[0])
            return
        # A warning printed to stderr would make nbgrader fail this (graded) cell.
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            results = run_exercise(LocalImplementation(namespace), self.assignment.slug, name)
        print(render_exercise(name, results))
        status = exercise_status(results)
        self.remember(name, results, namespace.get(name))
        if status == "passed":
            print(NOT_A_GRADE)
        elif validating():
            raise SelfCheckFailed(f"{name}: {status}")
        elif status == "failed":
            print(f"(stuck? lesson.hint({name}) gives a hint, one rung at a time)")

    def remember(self, name: str, results: list[Outcome], definition: Any) -> None:
        """Keep a check's results for the hint ladder, and add them to the progress record."""
        self.last[name], self.definitions[name], self.checked = results, definition, name
        if exercise_status(results) == "failed":
            self.failed[name] = self.failed.get(name, 0) + 1
        entries = progress.entries_of(self.assignment.slug, [(name, results)], "notebook")
        warning = progress.append(entries)
        if warning:
            print(f"(note: {warning})")

    def hint(self, exercise: Any = None) -> None:
        """Print the next rung of ``exercise``'s hint ladder (the exercise checked last when
        left out), from the outcome of its last ``lesson.check``: what the check saw, the
        idea, where to look, and, after several failed checks, the reference answer (see
        :mod:`attnkit.hints`)."""
        from . import hints

        if exercise is None:
            name = self.checked
        else:
            caller = inspect.currentframe().f_back
            namespace = dict(caller.f_globals) if caller is not None else {}
            name = self.exercise_name(exercise, namespace)
        if name is None or name not in {e.name for e in self.assignment.exercises}:
            names = ", ".join(e.name for e in self.assignment.exercises)
            print(f"hint() needs an exercise of this lesson or its name, e.g. one of: {names}")
            return
        if name not in self.last:
            print(f"Run lesson.check({name}) first: the hints start from what it sees.")
            return
        entries, _ = progress.read()
        failed = max(
            self.failed.get(name, 0),
            progress.failed_since_passing(entries, self.assignment.slug, name),
        )
        self.ladders[name], text = hints.climb(
            self.ladders.get(name),
            self.assignment.slug,
            name,
            self.last[name],
            self.definitions.get(name),
            failed,
            # Never while nbgrader validates or grades: the reference is for the learner.
            hints.references_installed() and progress.recording(),
        )
        print(text)

    def exercise_name(self, exercise: Any, namespace: dict[str, Any]) -> str | None:
        """The exercise that ``exercise`` answers: its name, or the name it is bound to.

        Any binding of an exercise's name counts, as it does when grading: a lambda, a
        ``functools.partial``, a ``torch.jit.script``-ed function or a callable object
        assigned to ``softmax`` is ``softmax``, whatever its own ``__name__``.
        """
        if isinstance(exercise, str):
            return exercise
        names = [e.name for e in self.assignment.exercises]
        own = getattr(exercise, "__name__", None)
        bound = [n for n in names if namespace.get(n) is exercise]
        if bound:
            return own if own in bound else bound[0]
        # Not bound in the caller's globals (e.g. checked from inside a function): the
        # object's own name, a scripted function's name, or a partial's function's name.
        candidates = (
            own,
            getattr(exercise, "name", None),
            getattr(getattr(exercise, "func", None), "__name__", None),
            type(exercise).__name__,
        )
        for candidate in candidates:
            if isinstance(candidate, str) and candidate in names:
                return candidate
        return own if isinstance(own, str) else None

    def train(self, model: Any, batches: Any, step: Any, **options: Any) -> list[float] | None:
        """Train ``model`` with your ``step`` (lesson 5's ``train_step``) and watch the loss
        fall: see :func:`attnkit.watch.train`. The grader does not run this cell. Until the
        exercises it uses are done, it prints one line instead."""
        from .watch import train

        with self.demo():
            return train(model, batches, step, **options)
        return None

    def show_heads(self, model: Any, ids: Any, **options: Any) -> list[Any] | None:
        """Draw what each attention head of ``model`` looks at on ``ids``: see
        :func:`attnkit.watch.show_heads`. The grader does not run this cell."""
        from .watch import show_heads

        with self.demo():
            return show_heads(model, ids, **options)
        return None

    def show_window(self, sliding_window_mask: Any, **options: Any) -> Any:
        """Draw which keys your ``sliding_window_mask`` lets each query see: see
        :func:`attnkit.inference.show_window`. The grader does not run this cell."""
        from .inference import show_window

        with self.demo():
            return show_window(sliding_window_mask, **options)
        return None

    def show_rope(self, rope: Any, **options: Any) -> Any:
        """Draw what your ``rope`` does to a dot product as the distance grows: see
        :func:`attnkit.inference.show_rope`. The grader does not run this cell."""
        from .inference import show_rope

        with self.demo():
            return show_rope(rope, **options)
        return None

    def show_cache_memory(self, attention_class: Any, **options: Any) -> Any:
        """Draw a large model's cache memory against the context length, from your classes:
        see :func:`attnkit.inference.show_cache_memory`. The grader does not run this cell."""
        from .inference import show_cache_memory

        with self.demo():
            return show_cache_memory(attention_class, **options)
        return None

    def time_generation(self, model_class: Any, generate: Any, **options: Any) -> Any:
        """Time each generated token with your cache and without one, on this CPU: see
        :func:`attnkit.inference.time_generation`. The grader does not run this cell."""
        from .inference import time_generation

        with self.demo():
            return time_generation(model_class, generate, **options)
        return None

    def naive_attention(self, q: Any, k: Any, v: Any, causal: bool = False) -> tuple[Any, Any]:
        """(output, log-sum-exp) of attention that builds the whole score matrix (lesson 7's
        baseline, with its causal mask aligned bottom-right): see
        :func:`attnkit.flash.naive_attention`."""
        from .flash import naive_attention

        return naive_attention(q, k, v, causal)

    def show_tiles(self, **options: Any) -> list[Any] | None:
        """Draw the tiles one FlashAttention call walks through and one row's running
        statistics (lesson 7): see :func:`attnkit.flash.show_tiles`. The grader does not run
        this cell."""
        from .flash import show_tiles

        return show_tiles(**options)

    def compare_memory(self, flash_attention: Any, **options: Any) -> list[Any] | None:
        """Measure and plot the memory of naive attention and of your ``flash_attention``
        against T (lesson 7): see :func:`attnkit.flash.compare_memory`. The grader does not
        run this cell. Until ``flash_attention`` is done, it prints one line instead."""
        from .flash import compare_memory

        with self.demo():
            return compare_memory(flash_attention, **options)
        return None

    def compare_time(self, flash_attention: Any, **options: Any) -> list[Any] | None:
        """Time naive attention and your ``flash_attention`` against T on this CPU (lesson
        7): see :func:`attnkit.flash.compare_time`. The grader does not run this cell."""
        from .flash import compare_time

        with self.demo():
            return compare_time(flash_attention, **options)
        return None

    @contextmanager
    def demo(self) -> Iterator[None]:
        """Run demo code, turning "not implemented yet" into one line instead of a traceback.

        The grader runs the notebook once more where PyTorch has no softmax or fused
        attention (see attnkit.student_process.withheld): a demo that compares with one is
        skipped there the same way."""
        from .student_process.withheld import KernelWithheld

        try:
            yield
        except KernelWithheld:
            print("(demo skipped: it compares with a library kernel the grader withholds)")
        except NotImplementedError as exc:
            frames = traceback.extract_tb(exc.__traceback__)
            where = frames[-1].name if frames else "an exercise"
            print(f"(demo skipped: {where} is not implemented yet; it will run once it is)")
