"""The ``attnkit`` command line.

Each sub-command is one function taking the parsed arguments and returning an exit
code. Errors the user can fix are :class:`~attnkit.errors.KitError` and print as a short
message with a hint; they never show a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from . import __version__
from .errors import KitError


def cmd_data(args: argparse.Namespace) -> int:
    """Find (or install, or download) the-verdict.txt, verify it and count its tokens."""
    from attnkit_data import verdict
    from attnkit_data.tokenizer import gpt2_tokenizer

    if args.source is not None:
        found = verdict.VerdictFile(verdict.install_copy(args.source, "--from"), "--from")
    else:
        found = verdict.locate_verdict(allow_download=not args.offline)
    text = found.path.read_text(encoding="utf-8")
    tokens = gpt2_tokenizer().encode(text, allowed_special={"<|endoftext|>"})
    print(f"the-verdict.txt  {found.path}  ({found.source})")
    print(f"  size    {found.path.stat().st_size:,} bytes")
    print(f"  sha256  {verdict.VERDICT_SHA256}  ok")
    print(f"  tokens  {len(tokens):,} (GPT-2 BPE, offline)")
    return 0


def find_notebooks(slugs: list[str], root: Path) -> list[tuple[str, Path]]:
    """A student's notebooks: here, in a folder per assignment, in notebooks/ (where the
    student bundle puts them), or under assignments/ (a clone of the kit)."""
    found = []
    for slug in slugs:
        for candidate in (
            root / f"{slug}.ipynb",
            root / slug / f"{slug}.ipynb",
            root / "notebooks" / f"{slug}.ipynb",
            root / "assignments" / slug / f"{slug}.ipynb",
        ):
            if candidate.is_file():
                found.append((slug, candidate))
                break
    return found


CELL_TIMEOUT = 30.0
"""Seconds one notebook cell may run in ``attnkit check`` (as in the grader)."""


@contextlib.contextmanager
def kernel_folder(folder: Path) -> Iterator[None]:
    """Run as a Jupyter kernel started on a notebook in ``folder`` does: ``folder`` is the
    working folder and importable, so a module one cell writes (%%writefile helper.py)
    is imported by another. Both are put back afterwards."""
    previous = Path.cwd()
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(folder))
        os.chdir(previous)


def cmd_check(args: argparse.Namespace) -> int:
    """Run the visible checks against a student's notebook and print a table per exercise."""
    import io

    from .assignments import ASSIGNMENTS, get_assignment
    from .implementation import LocalImplementation
    from .notebook_code import load_notebook
    from .selfcheck import run_exercise
    from .selfcheck.report import exercise_status, render_table

    def resolve(name: str) -> str:
        try:
            return get_assignment(name).slug
        except KeyError as exc:
            raise KitError(exc.args[0]) from None

    if args.notebook is not None:
        if args.assignment:
            slug = resolve(args.assignment)
        else:
            matches = [s for s in ASSIGNMENTS if s in args.notebook.name]
            if not matches:
                raise KitError(
                    f"cannot tell which assignment {args.notebook} is.",
                    "Name it: attnkit check 02 --notebook PATH",
                )
            slug = matches[0]
        targets = [(slug, args.notebook)]
    else:
        slugs = [resolve(args.assignment)] if args.assignment else list(ASSIGNMENTS)
        targets = find_notebooks(slugs, Path.cwd())
        if not targets:
            wanted = " or ".join(f"{s}.ipynb" for s in slugs)
            raise KitError(
                f"found no {wanted} here ({Path.cwd()}).",
                "Run this in the folder that holds your notebook (or its notebooks/ or "
                "assignments/ folder), or pass --notebook PATH.",
            )

    all_passed = True
    for slug, path in targets:
        rows = []
        where = path.resolve()  # before the working folder changes
        with kernel_folder(where.parent):
            # Demo code prints; the table is what matters here.
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                run = load_notebook(where, cell_timeout=CELL_TIMEOUT)
            notes = run.notes
            impl = LocalImplementation(run.namespace, label=str(path))
            for exercise in ASSIGNMENTS[slug].exercises:
                with contextlib.redirect_stdout(io.StringIO()):
                    results = run_exercise(impl, slug, exercise.name, timeout_s=args.timeout)
                rows.append((exercise.name, results))
                all_passed &= exercise_status(results) == "passed"
        print(render_table(f"{ASSIGNMENTS[slug].title}: {path}", rows))
        for note in notes:
            print(f"note: {note}")
        print()
    return 0 if all_passed else 1


def cmd_generate(args: argparse.Namespace) -> int:
    """Regenerate the student notebooks in assignments/ with nbgrader (instructors)."""
    course = instructor_module("attnkit_autograder.course")
    fingerprints = instructor_module("attnkit_autograder.fingerprints")
    if args.check:
        problems = course.released_differences(args.out) + fingerprints.stale()
        for problem in problems:
            print(problem)
        if problems:
            print("run `attnkit generate` to regenerate them", file=sys.stderr)
            return 1
        print(f"{args.out} matches the source notebooks")
        return 0
    for path in course.generate_released(args.out):
        print(f"wrote {path}")
    print(f"wrote {fingerprints.write_fingerprints()}")
    return 0


def cmd_grade(args: argparse.Namespace) -> int:
    """Grade submissions in isolated workers; write OUT/grades.json and OUT/grades.csv."""
    discovery = instructor_module("attnkit_autograder.discovery")
    engine = instructor_module("attnkit_autograder.engine")
    from tqdm import tqdm

    if not args.submissions.exists():
        raise KitError(f"{args.submissions} does not exist.", "Pass a folder of submissions.")
    forced = None
    if args.assignment:
        from .assignments import get_assignment

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
    sandbox = instructor_module("attnkit_autograder.sandbox")
    # The hidden suites feed real dataloader batches of the lesson text: find (or fetch
    # and verify) it once, now, rather than fail every submission on it.
    from attnkit_data.verdict import locate_verdict

    locate_verdict(progress=False)
    if args.no_sandbox:
        print(
            "WARNING: --no-sandbox: submissions run WITHOUT isolation. Use this for trusted "
            "code only; every result records it.",
            file=sys.stderr,
        )
    elif args.sandbox_user:
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
        with tqdm(total=len(todo), unit="submission", desc="grading", disable=None) as bar:
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
            feedback = instructor_module("attnkit_autograder.feedback")
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
    nbgrader_gradebook = instructor_module("attnkit_autograder.nbgrader_gradebook")
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
    gradescope = instructor_module("attnkit_autograder.gradescope")
    from .assignments import get_assignment

    try:
        slug = get_assignment(args.assignment).slug
    except KeyError as exc:
        raise KitError(exc.args[0]) from None
    kit_root = Path(__file__).resolve().parent.parent
    path = gradescope.build_zip(args.zip, slug, args.visibility, kit_root)
    gradescope.verify_scripts_parse(path)
    print(f"wrote {path}: upload it as the autograder of {slug} on Gradescope")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    """Build the student bundle and prove it holds no solution or hidden test."""
    bundle = instructor_module("attnkit_autograder.bundle")
    kit_root = Path(__file__).resolve().parent.parent
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
    course = instructor_module("attnkit_autograder.course")
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
    demo = instructor_module("attnkit_autograder.demo")
    return demo.run_demo(args.out, args.jobs)


def instructor_module(name: str):
    """Import an instructor-only module, or explain that this install is the student one."""
    import importlib

    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(("attnkit_autograder", "attnkit_solutions")):
            raise KitError(
                "this command is for instructors; the student install does not include it.",
                "Install the full kit from its repository: pip install -e .",
            ) from None
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnkit",
        description="attention-kit: exercises, self-checks and a grader for self-attention.",
    )
    parser.add_argument("--version", action="version", version=f"attnkit {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    data = commands.add_parser(
        "data",
        help="find, verify and (when online) download the-verdict.txt",
        description="Find the-verdict.txt ($ATTNKIT_VERDICT, the data folder, a shared copy, "
        "then a download), check its SHA-256 and count its GPT-2 tokens.",
    )
    data.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="PATH",
        help="install this local copy into the data folder (after checking it)",
    )
    data.add_argument("--offline", action="store_true", help="never try to download")
    data.set_defaults(handler=cmd_data)

    check = commands.add_parser(
        "check",
        help="run the visible checks against your notebook",
        description="Run the visible checks of an assignment against a notebook and print a "
        "table per exercise. Exits 1 unless every exercise passes. These are the public "
        "checks only; grades come from hidden tests.",
    )
    check.add_argument(
        "assignment", nargs="?", help="assignment number or name, e.g. 2 or 02_self_attention"
    )
    check.add_argument("--notebook", type=Path, metavar="PATH", help="the notebook to check")
    check.add_argument(
        "--timeout", type=float, default=10.0, help="seconds allowed per check (default 10)"
    )
    check.set_defaults(handler=cmd_check)

    generate = commands.add_parser(
        "generate",
        help="(instructors) regenerate assignments/ from the source notebooks with nbgrader",
    )
    generate.add_argument("--out", type=Path, default=Path("assignments"), metavar="DIR")
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
    grade.add_argument("submissions", type=Path, metavar="SUBMISSIONS")
    grade.add_argument("--out", type=Path, required=True, metavar="OUT")
    grade.add_argument("--assignment", help="grade every file as this assignment")
    grade.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="grader processes")
    grade.add_argument("--force", action="store_true", help="regrade submissions already graded")
    grade.add_argument("--timeout", type=float, default=10.0, help="seconds per hidden test call")
    grade.add_argument("--budget", type=float, default=120.0, help="seconds per submission")
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
    gradescope.add_argument("zip", type=Path, metavar="OUT.zip")
    gradescope.add_argument("--assignment", required=True, help="e.g. 2 or 02_self_attention")
    gradescope.add_argument(
        "--visibility",
        default="after_published",
        choices=["hidden", "after_due_date", "after_published"],
        help="when students see the hidden tests' results (default: after_published)",
    )
    gradescope.set_defaults(handler=cmd_gradescope)

    release = commands.add_parser(
        "release",
        help="(instructors) build the student bundle: notebooks, self-check, data tools",
    )
    release.add_argument("zip", type=Path, metavar="OUT.zip")
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
    init.add_argument("dir", type=Path, metavar="DIR")
    init.set_defaults(handler=cmd_course_init)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except KitError as err:
        print(f"attnkit {args.command}: {err.message}", file=sys.stderr)
        if err.hint:
            print(err.hint, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"attnkit {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
