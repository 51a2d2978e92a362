"""The instructors' ``attnkit`` commands: generate, grade, gradescope, release, demo, course.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attnkit.errors import KitError
from attnkit.terminal import raw

KIT_ROOT = Path(__file__).resolve().parent.parent
"""The kit's checkout (a clone holds assignments/, README.md and pyproject.toml here)."""


def cmd_generate(args: argparse.Namespace) -> int:
    """Regenerate the student notebooks in assignments/ with nbgrader (instructors)."""
    from . import command_reference as reference
    from . import course, fingerprints, registry

    if args.check:
        problems = registry.stale() + course.released_differences(args.out)
        problems += fingerprints.stale() + reference.stale()
        for problem in problems:
            print(problem)
        if problems:
            print("run `attnkit generate` to regenerate them", file=sys.stderr)
            return 1
        print(f"{args.out} matches the source notebooks")
        return 0
    for path in [*registry.write(), *course.generate_released(args.out)]:
        print(f"wrote {path}")
    print(f"wrote {fingerprints.write_fingerprints()}")
    if (readme := reference.write()) is not None:
        print(f"wrote the command reference in {readme}")
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    """Grade submissions in isolated workers; write OUT/grades.json and OUT/grades.csv."""
    from tqdm import tqdm

    from . import discovery, engine

    if not args.submissions.exists():
        raise KitError(f"{args.submissions} does not exist.", "Pass a folder of submissions.")
    forced = None
    if args.assignment:
        from attnkit.assignments import get_assignment

        try:
            forced = get_assignment(args.assignment).slug
        except KeyError as exc:
            raise KitError(exc.args[0]) from None
    submissions = discovery.discover(args.submissions, forced)
    if not submissions:
        raise KitError(
            f"found no submissions (.ipynb or .py files) under {args.submissions}.",
            "Give a folder per student, nbgrader's submitted/ folder, or notebook files.",
        )
    settings = engine.GradeSettings(
        call_timeout=args.timeout,
        budget=args.budget,
        memory_mb=args.memory_mb,
        feedback=args.feedback,
        cell_timeout=args.cell_timeout,
        sandbox=not args.no_sandbox,
        sandbox_user=args.sandbox_user,
    )
    # The hidden suites feed real dataloader batches of the lesson text: find (or fetch
    # and verify) it once, now, rather than fail every submission on it.
    from attnkit_data.verdict import locate_verdict

    from . import sandbox

    locate_verdict(progress=False)
    if args.jobs is None and not args.sandbox_user:
        args.jobs = os.cpu_count() or 1
    if args.no_sandbox:
        print(
            "WARNING: --no-sandbox: submissions run WITHOUT isolation. Use this for trusted "
            "code only; every result records it.",
            file=sys.stderr,
        )
    elif args.sandbox_user:
        if args.jobs is not None and args.jobs > 1:
            # Every grader's workers would share the one uid, and could signal each other.
            raise KitError(
                "--sandbox-user grades with one grader process: workers of parallel graders "
                "would share that user's uid.",
                "Pass --jobs 1 with --sandbox-user (or use bubblewrap, which has no such limit).",
            )
        args.jobs = 1
        if not args.out.exists():
            args.out.mkdir(mode=0o700, parents=True)
        # Without namespaces, file permissions alone keep the references, the other
        # students' files and OUT from a submission: refuse to start unless they do.
        sandbox.check_sandbox_user(args.sandbox_user, (args.submissions, args.out))
        print(f"sandbox: {sandbox.level_of(settings.sandbox_settings())}")
    else:
        # Refuse now, with the fix, rather than record every submission as an error.
        level = sandbox.check_sandbox(sandbox.SandboxSettings())
        print(f"sandbox: {level}")
    with engine.exclusive(args.out):
        todo = engine.pending(submissions, args.out, settings, args.force)
        skipped = len(submissions) - len(todo)
        if skipped:
            print(
                f"{skipped} submission(s) already graded in {args.out}: skipped (--force regrades)"
            )
        progress = tqdm(
            total=len(todo), unit="submission", desc="grading", disable=None, file=raw(sys.stderr)
        )
        with progress as bar:
            outcome = engine.grade_all(todo, args.out, settings, args.jobs, progress=bar.update)
        absent = engine.missing(submissions, args.out)
        try:
            records = engine.write_gradebook(args.out, submissions)
        except OSError as exc:
            if absent:
                report_missing(absent, outcome.lost, engine.result_path, args.out)
            raise KitError(
                engine.disk_advice(args.out / "grades.json", exc) + ".",
                "grades.json and grades.csv were left as they were (both old, never half-written).",
            ) from None
        if args.feedback:
            from . import feedback

            reports = feedback.write_feedback(args.out)
    print(engine.summary_table(records))
    print(f"wrote {args.out / 'grades.json'} and {args.out / 'grades.csv'}")
    if args.feedback:
        print(f"wrote {len(reports)} feedback reports (HTML and text) in {args.out / 'feedback'}")
    if outcome.interrupted:
        print(
            "interrupted: the results so far are saved; run the same command to resume",
            file=sys.stderr,
        )
        return 130
    from . import nbgrader_gradebook

    course = args.gradebook or nbgrader_gradebook.find_course(args.submissions)
    if course is not None:
        for note in nbgrader_gradebook.push_grades(course, records):
            print(f"note: {note}")
        print(f"grades written to the nbgrader gradebook of {course}")
    if absent:
        report_missing(absent, outcome.lost, engine.result_path, args.out)
        return 1
    return 0


def report_missing(absent: list, lost: dict, result_path: Callable, out: Path) -> None:
    """Name every submission the run could not record, and why; the run then exits 1."""
    print(
        f"INCOMPLETE: {len(absent)} submission(s) have no result, so grades.json and "
        "grades.csv leave them out:",
        file=sys.stderr,
    )
    for submission in absent:
        why = lost.get(result_path(out, submission), "no result was recorded")
        print(f"  {submission.student!r} ({submission.path}): {why}", file=sys.stderr)
    print("Run the same command again to grade them; graded work is kept.", file=sys.stderr)


def cmd_gradescope(args: argparse.Namespace) -> int:
    """Build a Gradescope autograder zip for one assignment."""
    from attnkit.assignments import get_assignment

    from . import gradescope

    try:
        slug = get_assignment(args.assignment).slug
    except KeyError as exc:
        raise KitError(exc.args[0]) from None
    kit_root = KIT_ROOT
    path = gradescope.build_zip(args.zip, slug, args.visibility, kit_root)
    gradescope.verify_scripts_parse(path)
    print(f"wrote {path}: upload it as the autograder of {slug} on Gradescope")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    """Build the student bundle and prove it holds no solution or hidden test."""
    from . import bundle

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
    from . import course

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
    from . import demo

    return demo.run_demo(args.out, args.jobs)


def register(commands: Any) -> None:
    """Add the instructors' commands to the ``attnkit`` sub-command parsers."""
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

    grade = commands.add_parser(
        "grade",
        help="(instructors) grade submissions with the hidden tests, each in a sandbox",
        description="Grade every submission under SUBMISSIONS (a folder per student, "
        "nbgrader's submitted/ folder, or notebook files) and write OUT/grades.json and "
        "OUT/grades.csv. Rerunning resumes; --force regrades everything.",
    )
    grade.add_argument(
        "submissions",
        type=Path,
        metavar="SUBMISSIONS",
        help="a notebook, a folder of them (LMS downloads), or an nbgrader course",
    )
    grade.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="OUT",
        help="where grades.json, grades.csv, results/ and feedback/ go",
    )
    grade.add_argument("--assignment", help="grade every file as this assignment")
    grade.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="grader processes (default: cores; 1 with --sandbox-user)",
    )
    grade.add_argument("--force", action="store_true", help="regrade submissions already graded")
    grade.add_argument("--timeout", type=float, default=10.0, help="seconds per hidden test call")
    grade.add_argument(
        "--budget",
        type=float,
        default=120.0,
        help="seconds per submission for its notebook's cells, and as long again for the "
        "hidden tests",
    )
    grade.add_argument("--memory-mb", type=int, default=2048, help="memory per submission (MiB)")
    grade.add_argument(
        "--cell-timeout",
        type=float,
        default=30.0,
        help="seconds one notebook cell may run before it is stopped (default 30)",
    )
    grade.add_argument(
        "--sandbox-user",
        metavar="USER",
        help="instead of bubblewrap, run submissions as this separate unprivileged user "
        "(for hosts without user namespaces, e.g. Gradescope; needs root; weaker, see README)",
    )
    grade.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run submissions WITHOUT isolation: for trusted code only (recorded in results)",
    )
    grade.add_argument(
        "--feedback",
        action="store_true",
        help="also write a feedback report per submission: OUT/feedback/<student>/*.html, .txt",
    )
    grade.add_argument(
        "--gradebook",
        type=Path,
        metavar="COURSE",
        help="also write the grades into this nbgrader course's gradebook (automatic when "
        "SUBMISSIONS is a course or its submitted/ folder)",
    )
    grade.set_defaults(handler=cmd_grade)

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
    gradescope.set_defaults(handler=cmd_gradescope)

    release = commands.add_parser(
        "release",
        help="(instructors) build the student bundle: notebooks, self-check, data tools",
    )
    release.add_argument("zip", type=Path, metavar="OUT.zip", help="the zip to write")
    release.set_defaults(handler=cmd_release)

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
    demo.set_defaults(handler=cmd_demo)

    course = commands.add_parser("course", help="(instructors) nbgrader course tools")
    course_commands = course.add_subparsers(dest="course_command", metavar="ACTION")
    init = course_commands.add_parser(
        "init",
        help="create an nbgrader course: config, source notebooks, gradebook",
    )
    init.add_argument("dir", type=Path, metavar="DIR", help="the course folder to create")
    init.set_defaults(handler=cmd_course_init)
