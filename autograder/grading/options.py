"""The grading options, each declared once: its default, its range, its help, and whether it
changes a result.

:class:`GradeOptions` is the one record of them. Everything else is derived from its
fields: the command-line options of ``attnkit grade``, ``attnkit slurm`` and ``attnkit
gradescope`` (:func:`attnkit_autograder.cli.options.add_grade_options`), the ``options`` of
``class.json`` (:meth:`GradeOptions.to_dict`, :func:`from_dict`), the stamp every result
carries (:meth:`GradeOptions.stamp_fields`), the sandbox's limits (:meth:`GradeOptions.limits`),
and the arguments a Slurm task or Gradescope's ``run_autograder`` passes on
(:meth:`GradeOptions.arguments`).

Two options have one form on the command line and another in the record: ``late_policy``
is a file given as ``--late-policy POLICY.toml`` and recorded as the policy it holds, and
``seed_per_student`` is a switch recorded as the course secret's digest (never the secret).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from ..sandbox.isolation import Limits


def about(
    help: str,
    *,
    bounds: tuple[float, float] | None = None,
    stamp: bool = False,
    metavar: str | None = None,
    passed_on: bool = True,
    path: bool = False,
) -> dict[str, Any]:
    """What a field of :class:`GradeOptions` declares besides its default: ``bounds`` is the
    range a number must lie in, ``stamp`` whether a result graded with another value is not
    current, ``passed_on`` whether a Slurm task or Gradescope's grader is given it
    (isolation is not: each machine chooses its own), ``path`` whether the command line
    takes a file or folder of the instructor's (never readable by a sandbox user)."""
    return {
        "help": help,
        "bounds": bounds,
        "stamp": stamp,
        "metavar": metavar,
        "passed_on": passed_on,
        "path": path,
    }


@dataclass(frozen=True)
class GradeOptions:
    """How a class is graded. The defaults here are the kit's defaults everywhere."""

    timeout: float = field(
        default=10.0,
        metadata=about("seconds per hidden test call", bounds=(0.5, 86_400.0), stamp=True),
    )
    budget: float = field(
        default=120.0,
        metadata=about(
            "seconds per submission for its notebook's cells, and as long again for the hidden "
            "tests",
            bounds=(1.0, 86_400.0),
            stamp=True,
        ),
    )
    memory_mb: int = field(
        default=2048,
        metadata=about("memory per submission (MiB)", bounds=(256, 1_048_576), stamp=True),
    )
    cell_timeout: float = field(
        default=30.0,
        metadata=about(
            "seconds one notebook cell may run before it is stopped",
            bounds=(0.5, 86_400.0),
            stamp=True,
        ),
    )
    feedback: bool = field(
        default=False,
        metadata=about(
            "also write a feedback report per submission: OUT/feedback/<student>/*.html, .txt"
        ),
    )
    no_sandbox: bool = field(
        default=False,
        metadata=about(
            "run submissions WITHOUT isolation: for trusted code only (recorded in results)",
            stamp=True,
            passed_on=False,
        ),
    )
    sandbox_user: str | None = field(
        default=None,
        metadata=about(
            "instead of bubblewrap, run submissions as this separate unprivileged user (for hosts "
            "without user namespaces, e.g. Gradescope; needs root; weaker, see README)",
            stamp=True,
            metavar="USER",
            passed_on=False,
        ),
    )
    gradebook: str | None = field(
        default=None,
        metadata=about(
            "also write the grades into this nbgrader course's gradebook (automatic when "
            "SUBMISSIONS is a course or its submitted/ folder)",
            metavar="COURSE",
            path=True,
        ),
    )
    late_policy: dict[str, Any] | None = field(
        default=None,
        metadata=about(
            "apply this late policy (deadlines, extensions, a penalty per day): grades.json keeps "
            "the raw and the final score, and why",
            metavar="POLICY.toml",
            path=True,
        ),
    )
    partial_credit: bool = field(
        default=False,
        metadata=about(
            "give each graded cell points in proportion to its hidden tests that pass (2 of 3 "
            "of a 3-point cell: 2 points) instead of all or nothing; a forbidden call still "
            "earns the cell nothing",
            stamp=True,
        ),
    )
    seed_per_student: str | None = field(
        default=None,
        metadata=about(
            "draw each student's random hidden inputs from a seed of their own (the course secret "
            "and their id), so outputs shared between students do not match; the book's numbers "
            "stay fixed",
            stamp=True,
        ),
    )

    @property
    def sandbox(self) -> bool:
        """False only for --no-sandbox: trusted code, run without isolation."""
        return not self.no_sandbox

    def limits(self, budget: float | None = None) -> Limits:
        """The sandbox's limits for one submission (``budget``: what is left of it)."""
        return Limits(
            call_timeout=self.timeout,
            cell_timeout=self.cell_timeout,
            budget=self.budget if budget is None else budget,
            memory_bytes=self.memory_mb * 1024**2,
        )

    def to_dict(self) -> dict[str, Any]:
        """The record as class.json keeps it."""
        return dataclasses.asdict(self)

    def stamp_fields(self) -> dict[str, Any]:
        """What a result depends on (besides the grading packages): the options marked
        ``stamp``, the numbers as floats; per-student inputs and partial credit only when on
        (off, the stamp is what it was before the option existed)."""
        decided: dict[str, Any] = {}
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            if not spec.metadata["stamp"] or (spec.name in OPTIONAL and not value):
                continue
            decided[spec.name] = float(value) if spec.type == "float" else value
        return decided

    def changed(self) -> dict[str, Any]:
        """The options that differ from their defaults and are passed on (see :func:`option`)."""
        default = GradeOptions()
        return {
            spec.name: getattr(self, spec.name)
            for spec in dataclasses.fields(self)
            if spec.metadata["passed_on"]
            and getattr(self, spec.name) != getattr(default, spec.name)
        }


def fields() -> tuple[dataclasses.Field, ...]:
    """Every grading option, in the record's order."""
    return dataclasses.fields(GradeOptions)


OPTIONAL: dict[str, Any] = {"seed_per_student": None, "late_policy": None, "partial_credit": False}
"""Options a class.json may leave out, with their value then (off)."""

TYPES: dict[str, tuple[type, ...]] = {
    "float": (float, int),
    "int": (int,),
    "bool": (bool,),
    "str | None": (str, type(None)),
    "dict[str, Any] | None": (dict, type(None)),
}
"""The Python types a value of each declared type may have (read back from a file)."""


def problem(values: dict[str, Any]) -> str | None:
    """What is wrong with these option values (from the command line or a class.json), or
    None. A number outside its bounds (a budget of -1, NaN or 1e300, 2^62 MiB) would fail
    every student for the operator's typo, or the grader itself."""
    for spec in fields():
        value = values.get(spec.name)
        kinds = TYPES[str(spec.type)]
        if type(value) not in kinds:
            return f"{spec.name} is not {' or '.join(k.__name__ for k in kinds)}"
        bounds = spec.metadata["bounds"]
        if bounds is not None and isinstance(value, int | float):
            low, high = bounds
            if not (math.isfinite(value) and low <= value <= high):
                return f"{spec.name} is {value!r}, not between {low:g} and {high:g}"
    return None


def from_dict(values: dict[str, Any]) -> GradeOptions:
    """The record of checked ``values`` (see :func:`problem`; a missing optional one is off)."""
    return GradeOptions(**(OPTIONAL | values))
