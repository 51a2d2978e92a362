"""The instructors' ``attnkit`` commands: generate, grade, merge, regrade, slurm, gradescope,
release, demo, course.

They register themselves into the public command line through the ``attnkit.commands``
entry point (see pyproject.toml), so the public ``attnkit`` package never names this one:
a student install (the bundle) has no such entry point, and its ``attnkit --help`` lists
only the student commands. Each command is one function taking the parsed arguments and
returning an exit code; errors the user can fix are :class:`~attnkit.errors.KitError`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from attnkit.errors import KitError

from .classes import grade as grade_command
from .classes import merge, regrade
from .grading import per_student
from .platforms import class_report, lms_export, slurm

KIT_ROOT = Path(__file__).resolve().parent.parent
"""The kit's checkout (a clone holds assignments/, README.md and pyproject.toml here)."""


def cmd_generate(args: argparse.Namespace) -> int:
    """Regenerate the student notebooks in assignments/ with nbgrader (instructors)."""
    from .authoring import command_reference as reference
    from .authoring import expected_values, fingerprints, registry, released

    if args.check:
        stale_registry = registry.stale()
        problems = stale_registry + released.released_differences(args.out)
        # The visible checks name their exercises in the registry: with a stale one they
        # cannot load, so the fingerprints wait until it is regenerated.
        problems += [] if stale_registry else fingerprints.stale() + expected_values.stale()
        problems += reference.stale()
        for problem in problems:
            print(problem)
        if problems:
            print("run `attnkit generate` to regenerate them", file=sys.stderr)
            return 1
        print(f"{args.out} matches the source notebooks")
        return 0
    for path in [*registry.write(), *released.generate_released(args.out)]:
        print(f"wrote {path}")
    print(f"wrote {expected_values.write()}")
    print(f"wrote {fingerprints.write_fingerprints()}")
    if (readme := reference.write()) is not None:
        print(f"wrote the command reference in {readme}")
    return 0


def cmd_gradescope(args: argparse.Namespace) -> int:
    """Build a Gradescope autograder zip for one assignment."""
    from attnkit.assignments import get_assignment

    from .platforms import gradescope

    try:
        slug = get_assignment(args.assignment).slug
    except KeyError as exc:
        raise KitError(exc.args[0]) from None
    secret = None
    if args.seed_per_student or args.course_secret is not None:
        if not (args.seed_per_student and args.course_secret is not None):
            raise per_student.CourseSecretError(
                "--seed-per-student on Gradescope needs --course-secret FILE (the zip "
                "carries a copy of the secret, readable by root only).",
                "Pass both, or neither.",
            )
        secret = per_student.from_file(args.course_secret)
    kit_root = KIT_ROOT
    path = gradescope.build_zip(args.zip, slug, args.visibility, kit_root, secret, args.late_policy)
    gradescope.verify_scripts_parse(path)
    print(f"wrote {path}: upload it as the autograder of {slug} on Gradescope")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    """Build the student bundle and prove it holds no solution or hidden test."""
    from .platforms import bundle

    kit_root = KIT_ROOT
    path = bundle.build_bundle(args.zip, kit_root, kit_root / "assignments")
    leaks = bundle.secrets_in(path)
    if leaks:
        path.unlink()
        raise KitError(
            "the bundle would contain solution or hidden-test lines:\n  " + "\n  ".join(leaks[:10])
        )
    print(f"wrote {path}: the student notebooks, the self-check and the data tools")
    return 0


def cmd_course_init(args: argparse.Namespace) -> int:
    """Create a working nbgrader course from the kit."""
    from .platforms import course

    slugs = course.init_course(args.dir.resolve())
    print(
        f"created an nbgrader course in {args.dir} with {len(slugs)} assignments: "
        f"{', '.join(slugs)}"
    )
    scripts = Path(sys.executable).parent
    print(
        f"next: cd {args.dir} and run nbgrader there, with {scripts} first on PATH "
        "(nbgrader runs its helpers by name), e.g.\n"
        f'  export PATH="{scripts}:$PATH"; cd {args.dir}; '
        "nbgrader release_assignment 01_numpy_attention\n"
        "(or hand out release/ yourself)"
    )
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Build a small class of submissions and grade it, to show what the kit does."""
    from attnkit.assignments import get_assignment

    from .platforms import demo

    try:
        slug = get_assignment(args.lesson).slug
    except KeyError as exc:
        raise KitError(exc.args[0]) from None
    return demo.run_demo(args.out, args.jobs, slug)


def register(commands: Any) -> None:
    """Add the instructors' commands to the ``attnkit`` sub-command parsers."""
    add_generate(commands)
    grade_command.add_parser(commands)
    merge.add_parser(commands)
    regrade.add_parser(commands)
    slurm.add_parser(commands)
    lms_export.add_parser(commands)
    class_report.add_parser(commands)
    add_gradescope(commands)
    add_release(commands)
    add_demo(commands)
    add_course(commands)


def add_generate(commands: Any) -> None:
    generate = commands.add_parser(
        "generate",
        help="(instructors) regenerate assignments/ from the source notebooks with nbgrader",
    )
    generate.add_argument(
        "--out",
        type=Path,
        default=Path("assignments"),
        metavar="DIR",
        help="the folder of released notebooks to write or check (default: assignments)",
    )
    generate.add_argument(
        "--check", action="store_true", help="only report whether DIR is up to date"
    )
    generate.set_defaults(handler=cmd_generate)


def add_gradescope(commands: Any) -> None:
    gradescope = commands.add_parser(
        "gradescope",
        help="(instructors) build a Gradescope autograder zip for an assignment",
    )
    gradescope.add_argument("zip", type=Path, metavar="OUT.zip", help="the zip to write")
    gradescope.add_argument("--assignment", required=True, help="e.g. 2 or 02_self_attention")
    gradescope.add_argument(
        "--visibility",
        default="after_published",
        choices=["hidden", "after_due_date", "after_published", "visible"],
        help="when students see the hidden tests' results (default: after_published)",
    )
    per_student.add_options(gradescope, environment=False)
    gradescope.add_argument(
        "--late-policy",
        type=Path,
        metavar="POLICY.toml",
        help="apply this late policy to each submission's time in submission_metadata.json "
        "(with no deadline for the assignment in it, Gradescope's due date)",
    )
    gradescope.set_defaults(handler=cmd_gradescope)


def add_release(commands: Any) -> None:
    release = commands.add_parser(
        "release",
        help="(instructors) build the student bundle: notebooks, self-check, data tools",
    )
    release.add_argument("zip", type=Path, metavar="OUT.zip", help="the zip to write")
    release.set_defaults(handler=cmd_release)


def add_demo(commands: Any) -> None:
    demo = commands.add_parser(
        "demo",
        help="(instructors) grade a small made-up class, offline, to see what the kit does",
        description="Build a class of lesson-2 submissions from the released notebook "
        "(correct, classic mistakes, a hostile one, a damaged file), grade it with "
        "`attnkit grade --feedback` and print where the grades and reports are.",
    )
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("attnkit-demo"),
        metavar="DIR",
        help="where to write the class, grades and reports (default: ./attnkit-demo; "
        "a folder made by an earlier demo is replaced, any other is refused)",
    )
    demo.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="grader processes (default: cores)"
    )
    demo.add_argument(
        "--lesson", default="2", help="the lesson whose class is graded, e.g. 5 (default: 2)"
    )
    demo.set_defaults(handler=cmd_demo)


def add_course(commands: Any) -> None:
    course = commands.add_parser("course", help="(instructors) nbgrader course tools")
    course_commands = course.add_subparsers(dest="course_command", metavar="ACTION")
    init = course_commands.add_parser(
        "init",
        help="create an nbgrader course: config, source notebooks, gradebook",
    )
    init.add_argument("dir", type=Path, metavar="DIR", help="the course folder to create")
    init.set_defaults(handler=cmd_course_init)
