"""The commands of what leaves the kit: ``attnkit gradescope``, ``export``, ``report``,
``release``, ``demo`` and ``course``, each a thin call into :mod:`attnkit_autograder.platforms`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from attnkit.errors import KitError

from ..classes.run_manifest import option_problem
from ..grading.per_student import CourseSecretError, from_file
from ..platforms import lms_export
from ..platforms.gradescope import PASSED_ON as GRADESCOPE_OPTIONS
from . import options

KIT_ROOT = Path(__file__).resolve().parents[2]
"""The kit's checkout (a clone holds assignments/, README.md and pyproject.toml here)."""


def cmd_gradescope(args: argparse.Namespace) -> int:
    """Build a Gradescope autograder zip for one assignment."""
    from attnkit.assignments import get_assignment

    from ..platforms import gradescope

    try:
        slug = get_assignment(args.assignment).slug
    except KeyError as exc:
        raise KitError(exc.args[0]) from None
    secret = None
    if args.seed_per_student or args.course_secret is not None:
        if not (args.seed_per_student and args.course_secret is not None):
            raise CourseSecretError(
                "--seed-per-student on Gradescope needs --course-secret FILE (the zip "
                "carries a copy of the secret, readable by root only).",
                "Pass both, or neither.",
            )
        secret = from_file(args.course_secret)
    problem = option_problem(options.options_of(args).to_dict())
    if problem is not None:
        raise KitError(f"the grading options are not usable: {problem}.")
    path = gradescope.build_zip(
        args.zip,
        slug,
        args.visibility,
        KIT_ROOT,
        secret,
        args.late_policy,
        tuple(options.passed_on(args, gradescope.PASSED_ON)),
    )
    gradescope.verify_scripts_parse(path)
    print(f"wrote {path}: upload it as the autograder of {slug} on Gradescope")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    """Build the student bundle and prove it holds no solution or hidden test."""
    from ..platforms import bundle

    path = bundle.build_bundle(args.zip, KIT_ROOT, KIT_ROOT / "assignments")
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
    from ..platforms import course

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

    from ..platforms import demo

    try:
        slug = get_assignment(args.lesson).slug
    except KeyError as exc:
        raise KitError(exc.args[0]) from None
    return demo.run_demo(args.out, args.jobs, slug)


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
    options.add_grade_options(gradescope, GRADESCOPE_OPTIONS)
    gradescope.add_argument(
        "--seed-per-student",
        action="store_true",
        help="draw each student's random hidden inputs from a seed of their own",
    )
    options.add_secret_option(gradescope, environment=False)
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


def add_export(commands: Any) -> None:
    export = commands.add_parser(
        "export",
        help="(instructors) write OUT's grades as Canvas, Moodle or Gradescope import CSV, "
        "matched against the course roster",
        description="Write OUT/export-FORMAT.csv from OUT/grades.json for an LMS grade "
        "import. Students are matched by the roster's ids or email; a submission that "
        "matches no roster row (or two) is listed and nothing is written.",
    )
    export.add_argument("out", type=Path, metavar="OUT", help="the --out of attnkit grade")
    export.add_argument("--format", required=True, choices=lms_export.FORMATS, help="the platform")
    export.add_argument(
        "--roster",
        type=Path,
        required=True,
        metavar="ROSTER.csv",
        help="the platform's student list, a CSV with an id or email column",
    )
    export.add_argument(
        "--missing",
        choices=("blank", "zero"),
        default="blank",
        help="what a roster student with no graded submission gets (default: blank)",
    )
    export.add_argument(
        "--leave-out",
        action="append",
        default=[],
        metavar="STUDENT",
        help="a student id of the gradebook to leave out of the export on purpose (one not on "
        "the roster: a visitor, a withdrawn student); repeat for more. It is listed",
    )
    export.add_argument(
        "--column",
        action="append",
        default=[],
        metavar="[ASSIGNMENT=]NAME",
        help="the platform's own column (Canvas assignment, Moodle grade item, Gradescope "
        "assignment) to write into, by its header in the roster or Canvas's assignment id; "
        "ASSIGNMENT= when the gradebook holds several. Without it, a roster that is the "
        "platform's gradebook export is searched for the assignment's title",
    )
    export.set_defaults(handler=run_export)


def add_report(commands: Any) -> None:
    report = commands.add_parser(
        "report",
        help="(instructors) write OUT/report.html: score histograms, pass rates per graded "
        "cell, the most common named mistakes, who could not be graded, similar submissions",
        description="Write OUT/report.html, one self-contained page about the class graded "
        "into OUT (by attnkit grade or attnkit merge), with a similarity review: pairs of "
        "submissions whose own code is alike, for the instructor to read (never a penalty).",
    )
    report.add_argument("out", type=Path, metavar="OUT", help="the --out of attnkit grade")
    report.add_argument(
        "--no-similarity",
        dest="similarity",
        action="store_false",
        help="leave out the similarity review (which reads the graded files again)",
    )
    report.set_defaults(handler=run_report)


def run_export(args: argparse.Namespace) -> int:
    from ..platforms import lms_export

    target = lms_export.export(
        args.out,
        args.format,
        args.roster,
        args.missing,
        tuple(args.leave_out),
        tuple(args.column),
    )
    print(f"wrote {target}: import it into {args.format.split('-')[0].title()}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    from ..classes import results
    from ..platforms import class_report

    target = args.out / "report.html"
    results.write_atomic(target, class_report.render(args.out, args.similarity))
    print(f"wrote {target}")
    return 0
