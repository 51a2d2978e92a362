"""The grading options on the command line, derived from their one record
(:class:`~attnkit_autograder.grading.options.GradeOptions`): each option's flag, default,
help and range come from its field there, so ``attnkit grade``, ``attnkit slurm`` and
``attnkit gradescope`` offer the same options with the same defaults, and a Slurm task or
Gradescope's grader is given them back (:func:`passed_on`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path
from typing import Any

from attnkit.assignments import get_assignment
from attnkit.errors import KitError

from ..classes.late import policy_option
from ..classes.shards import Shard, choose
from ..grading import options as grading_options
from ..grading.options import GradeOptions
from ..grading.per_student import SECRET_VARIABLE, CourseSecret, CourseSecretError, read_secret

NUMBERS = {"float": float, "int": int}


def flag(spec: dataclasses.Field) -> str:
    return "--" + spec.name.replace("_", "-")


def add_grade_options(parser: argparse.ArgumentParser, names: tuple[str, ...] = ()) -> None:
    """The grading options named (all of them when ``names`` is empty), as the record
    declares them: ``late_policy`` takes the policy's file, ``seed_per_student`` is a switch
    (its course secret comes with :func:`add_secret_option`)."""
    for spec in grading_options.fields():
        if names and spec.name not in names:
            continue
        help_text, default = spec.metadata["help"], spec.default
        metavar = spec.metadata["metavar"]
        if spec.type == "bool" or spec.name == "seed_per_student":
            parser.add_argument(flag(spec), action="store_true", help=help_text)
        elif spec.type in NUMBERS:
            parser.add_argument(
                flag(spec),
                type=NUMBERS[spec.type],
                default=default,
                help=f"{help_text} (default {default:g})",
            )
        else:
            kind = Path if spec.metadata["path"] else str
            parser.add_argument(flag(spec), type=kind, metavar=metavar, help=help_text)


def add_secret_option(parser: argparse.ArgumentParser, environment: bool = True) -> None:
    """--course-secret, whose help names $ATTNKIT_COURSE_SECRET where it is read."""
    parser.add_argument(
        "--course-secret",
        type=Path,
        metavar="FILE",
        help="the file holding the course secret for per-student inputs"
        + (f" (else ${SECRET_VARIABLE})" if environment else ""),
    )


def add_shard_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shard",
        metavar="I/N",
        help="grade only the I-th of N slices of the class, into OUT/shard-I-of-N; "
        "`attnkit merge OUT` joins the slices (default: the job engine's array index, "
        "if any: Slurm, Kubernetes Indexed Job, AWS Batch)",
    )
    parser.add_argument(
        "--shards",
        type=int,
        metavar="N",
        help="how many slices the job engine's array runs (needed with Kubernetes and AWS "
        "Batch, whose index says only which; with Slurm, the array id is then the slice)",
    )


def add_only_option(parser: argparse.ArgumentParser) -> None:
    """--only, for the commands that grade a class (grade, regrade)."""
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="STUDENT",
        help="grade again only this student's submissions (their id exactly as grades.json "
        "has it), replacing their rows; every other row stays as it is. Repeat for more",
    )


def shard_of(args: argparse.Namespace) -> Shard | None:
    """The slice this run grades: --shard I/N, else the job engine's variables, else none."""
    return choose(args.shard, args.shards, os.environ)


def secret_of(args: argparse.Namespace) -> CourseSecret | None:
    """The course secret of a grading run, read once (from --course-secret or the
    environment), or None when --seed-per-student is off."""
    if not args.seed_per_student:
        if args.course_secret is not None:
            raise CourseSecretError(
                "--course-secret is only used with --seed-per-student.",
                "Add --seed-per-student, or leave out --course-secret.",
            )
        return None
    return read_secret(args.course_secret, os.environ)


def instructor_files(args: argparse.Namespace) -> tuple[Path, ...]:
    """The files and folders of the instructor's that the command line names (every option
    declared a ``path``, the course secret, and the nbgrader course whose gradebook the grades
    go to): what a sandbox user must not read."""
    from ..platforms.nbgrader_gradebook import find_course

    named = [getattr(args, s.name, None) for s in grading_options.fields() if s.metadata["path"]]
    named.append(getattr(args, "course_secret", None))
    submissions = getattr(args, "submissions", None)
    if getattr(args, "gradebook", None) is None and isinstance(submissions, str | Path):
        named.append(find_course(Path(submissions)))  # the course grades are written to
    return tuple(Path(value) for value in named if isinstance(value, str | Path))


def options_of(args: argparse.Namespace, secret: CourseSecret | None = None) -> GradeOptions:
    """The record of the grading options on ``args`` (options a command does not offer keep
    their defaults); ``--late-policy`` is read into the policy itself (a KitError naming the
    file and line when it cannot be)."""
    values: dict[str, Any] = {}
    for spec in grading_options.fields():
        if hasattr(args, spec.name):
            values[spec.name] = getattr(args, spec.name)
    values["seed_per_student"] = None if secret is None else secret.digest
    if values.get("late_policy") is not None:
        values["late_policy"] = policy_option(values["late_policy"])
    if values.get("gradebook") is not None:
        values["gradebook"] = os.path.abspath(values["gradebook"])
    for name in ("no_sandbox", "feedback"):
        values[name] = bool(values.get(name, False))
    return GradeOptions(**values)


def passed_on(args: argparse.Namespace, names: tuple[str, ...] = ()) -> list[str]:
    """The command-line arguments that give another process (a Slurm task, Gradescope's
    grader) the grading options on ``args``: every number, even at its default (the script
    keeps the values it was written with), switches that are on, and files as absolute
    paths. Isolation is each machine's own, and the course secret goes separately."""
    arguments: list[str] = []
    for spec in grading_options.fields():
        if not spec.metadata["passed_on"] or spec.name == "seed_per_student":
            continue
        if (names and spec.name not in names) or not hasattr(args, spec.name):
            continue
        value = getattr(args, spec.name)
        if spec.type in NUMBERS:
            arguments += [flag(spec), f"{value:g}"]
        elif spec.type == "bool" and value:
            arguments.append(flag(spec))
        elif value is not None and spec.type != "bool":
            arguments += [flag(spec), os.path.abspath(value)]
    return arguments


def assignment_of(text: str | None) -> str | None:
    """The slug of --assignment (``2`` or ``02_self_attention``), or None."""
    if not text:
        return None
    try:
        return get_assignment(text).slug
    except KeyError as exc:
        raise KitError(exc.args[0]) from None
