"""Grading each exercise where the library kernels it must not use do not exist.

The recorder watches PyTorch from inside the submission's process, where code written
against it can switch it off for the length of one call. So the grader does not rely on it
alone: every exercise is called in a worker forked with the kernels of its forbidden family
withheld before any student code ran (:mod:`attnkit.student_process.withheld`). An exercise
that needs a library softmax there raises, whatever it did to the recorder; one that
computes its answer from other kernels is graded on that answer.

One worker lives at a time (the sandbox's reset ends every worker), each running the
notebook's cells in full:

* ``softmax``: where the softmax is written by hand (and every fused attention, which
  computes a softmax too);
* ``attention``: the attention exercises, without the fused attention kernels.

An exercise that forbids nothing is answered by the ``attention`` worker where the lesson has
one, else by the lesson's only worker; if it meets a withheld kernel there (a comparison
inside a helper), a worker that withholds nothing answers it again. The hidden tests run in
ORDER (see :func:`test_order`), strictest first, and the running worker *lends* its answers
to a laxer worker's exercises (see :meth:`WithholdingSubmission._lender`): while its cells
reached no withheld kernel, and for each call that reaches none (a lent call that does ends
the worker before the notebook can catch the error, and is asked again where it belongs). So
lesson 2's cells run once for a notebook that never calls a library softmax, twice for one
that does; every other lesson's run once.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from attnkit.adapters import MissingDefinition
from attnkit.assignments import ASSIGNMENTS
from attnkit.student_process.recorder import ATTENTION_FAMILY, FAMILIES, SOFTMAX_FAMILY

from ..sandbox.cell_history import CellHistory
from ..sandbox.errors import WITHHELD_TYPE, SubmissionError
from ..sandbox.isolation import IsolatedSubmission, LentCallReached

ORDER = ("softmax", "attention", None)


def profile_for(forbidden: Iterable[str]) -> str | None:
    """What a worker must withhold to prove an exercise with these forbidden calls."""
    families = [FAMILIES.get(name) for name in forbidden]
    if any(family is SOFTMAX_FAMILY for family in families):
        return "softmax"
    if any(family is ATTENTION_FAMILY for family in families):
        return "attention"
    return None


@functools.cache
def default_profile(slug: str) -> str:
    """The worker of the lesson's exercises that forbid no family: the ``attention`` one
    where the lesson has one anyway, else the lesson's only worker (lesson 1's)."""
    profiles = {profile_for(e.forbidden) for e in ASSIGNMENTS[slug].exercises} - {None}
    return (
        "attention" if "attention" in profiles or not profiles else min(profiles, key=ORDER.index)
    )


@functools.cache
def test_order(slug: str) -> dict[str, int]:
    """Each graded cell's place in ORDER, by the forbidden calls of its exercise: the
    hidden tests run sorted by it, so that those of one worker run together."""
    from ..lessons.rubric import graded_cells

    forbidden = {e.name: e.forbidden for e in ASSIGNMENTS[slug].exercises}
    default = default_profile(slug)
    return {
        cell.grade_id: ORDER.index(profile_for(forbidden.get(cell.exercise, ())) or default)
        for cell in graded_cells(slug)
    }


def first_profile(slug: str) -> str:
    """The worker the lesson's hidden tests start with (its cells run first)."""
    return ORDER[min(test_order(slug).values(), default=ORDER.index(default_profile(slug)))]


def _withheld(exc: Exception) -> bool:
    return isinstance(exc, SubmissionError) and exc.type_name == WITHHELD_TYPE


def _missing(exc: Exception) -> bool:
    return isinstance(exc, MissingDefinition) or (
        isinstance(exc, SubmissionError) and exc.type_name == "NameError"
    )


class WithholdingSubmission:
    """One submission, answered by the worker its exercise's forbidden family calls for.

    ``open_worker(profile, primary)`` makes the :class:`IsolatedSubmission` for one profile;
    ``primary`` (the first one, whose cells' notes and timings are the submission's) bounds
    the time of the later ones."""

    def __init__(
        self,
        open_worker: Callable[[str | None, IsolatedSubmission | None], IsolatedSubmission],
        slug: str,
    ) -> None:
        self._open = open_worker
        self.first = first_profile(slug)
        self.default = default_profile(slug)
        self.workers: dict[str | None, IsolatedSubmission] = {}
        self.current: IsolatedSubmission | None = None
        self.variant: str | None = None
        self.label = ""
        self.unwithheld: set[str] = set()
        """Exercises that forbid nothing and met a withheld kernel: asked where none is."""
        self.lending = True
        """Whether a worker that withholds more may still answer for a laxer one's (see
        :meth:`_lender`)."""

    def _use(self, profile: str | None) -> IsolatedSubmission:
        worker = self.workers.get(profile)
        if worker is None:
            worker = self._open(profile, self.workers.get(self.first))
            self.workers[profile] = worker
            self.label = self.label or worker.label
        if self.current is not None and self.current is not worker:
            self.current.close()  # one worker at a time: the sandbox's reset ends them all
        self.current = worker
        return worker.with_variant(self.variant)

    @property
    def primary(self) -> IsolatedSubmission:
        return self.workers.get(self.first) or self._use(self.first)

    def prepare(self) -> None:
        self._use(self.first).prepare()

    def _lender(self, profile: str | None) -> IsolatedSubmission | None:
        """The running worker that may answer for ``profile``'s: one that withholds more
        (earlier in ORDER), whose cells reached no withheld kernel, while no lent call has
        needed one."""
        worker = self.current
        if not self.lending or worker is None or not worker.can_lend:
            return None
        stricter = ORDER.index(worker.withhold) < ORDER.index(profile)
        return worker.with_variant(self.variant) if stricter else None

    def run(
        self, adapter: str, *, forbidden: tuple[str, ...] = (), **kwargs: Any
    ) -> dict[str, Any]:
        profile = profile_for(forbidden)
        name = str(kwargs.get("name", adapter))
        if profile is None and name in self.unwithheld:
            return self._use(None).run(adapter, forbidden=forbidden, **kwargs)
        lender = self._lender(profile or self.default)
        if lender is not None:
            try:
                return lender.run(adapter, forbidden=forbidden, lent=True, **kwargs)
            except LentCallReached:
                self.lending = False  # from now on each exercise is asked in its own worker
        worker = self._use(profile or self.default)
        try:
            return worker.run(adapter, forbidden=forbidden, **kwargs)
        except (SubmissionError, MissingDefinition) as exc:
            if profile is None and (_withheld(exc) or (_missing(exc) and worker.history.withheld)):
                # Nothing is forbidden here: the kernel was only missing (or a cell stopped
                # at one before defining something), so ask again, and there from now on.
                self.unwithheld.add(name)
                return self._use(None).run(adapter, forbidden=forbidden, **kwargs)
            raise self._explained(worker, exc) from None

    @staticmethod
    def _explained(worker: IsolatedSubmission, exc: Exception) -> Exception:
        """A definition missing where a cell stopped at a withheld kernel: say which cell, as
        an error of the notebook's (a missing definition is never a forbidden call)."""
        if not (_missing(exc) and worker.history.withheld):
            return exc
        cell = min(worker.history.withheld)
        return SubmissionError(
            "NameError",
            f"not defined where the grader withholds library kernels: code cell {cell} "
            "stopped at one first; keep library comparisons in a cell of their own",
        )

    def redefined_at(self) -> set[str]:
        return (self.current or self.primary).redefined_at()

    def with_variant(self, grade_id: str | None) -> WithholdingSubmission:
        self.variant = grade_id
        return self

    def close(self) -> None:
        for worker in self.workers.values():
            worker.close()
        self.current = None

    kill = close

    # What the pipeline records of the run: the primary's cells, every worker's starts.
    @property
    def spawned(self) -> int:
        return sum(worker.workers.spawned for worker in self.workers.values())

    @property
    def sandbox(self) -> dict[str, Any]:
        killed = [k for worker in self.workers.values() for k in worker.killed_from_outside()]
        return (
            {**self.primary.sandbox, "killed_from_outside": killed}
            if killed
            else (self.primary.sandbox)
        )

    def memory(self) -> dict[str, Any]:
        """The workers' memory limit and the most any held, measured from outside (see
        IsolatedSubmission.memory)."""
        found: dict[str, Any] = {}
        for worker in self.workers.values():
            for key, value in worker.memory().items():
                found[key] = max(found.get(key, value), value)
        return found

    @property
    def failed(self) -> str | None:
        """Why the sandbox could not lend a worker, if it could not (the grader's fault)."""
        return next((w.workers.failed for w in self.workers.values() if w.workers.failed), None)

    @property
    def history(self) -> CellHistory:
        """What the cells did: the primary's account (its cells ran first)."""
        return self.primary.history
