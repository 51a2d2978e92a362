"""``attnkit grade``: find the submissions, choose the isolation, grade them all under the
supervisor, write the gradebook, and say plainly what could not be graded."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnkit.errors import KitError
from attnkit.terminal import one_line, raw

from ..grading import per_student
from ..grading.submission import MAX_SUBMISSION_BYTES, Refused, Submission, read_submission_file
from . import discovery, late, results, run_manifest, shards
from .grader_server import start_grader_server
from .shards import Shard

if TYPE_CHECKING:
    from ..grading.pipeline import GradeSettings
    from .supervisor import RunOutcome


def add_parser(commands: Any) -> None:
    """The ``grade`` sub-command and its options."""
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
    for add_options in (
        add_isolation_options,
        add_shard_options,
        per_student.add_options,
        add_class_options,
    ):
        add_options(grade)
    grade.set_defaults(handler=run, publish=True)


def add_class_options(grade: argparse.ArgumentParser) -> None:
    """What a run writes besides the grades: feedback, nbgrader's gradebook, late policy."""
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
    grade.add_argument(
        "--late-policy",
        type=Path,
        metavar="POLICY.toml",
        help="apply this late policy (deadlines, extensions, a penalty per day): grades.json "
        "keeps the raw and the final score, and why",
    )


def add_isolation_options(grade: argparse.ArgumentParser) -> None:
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


def choose_shard(args: argparse.Namespace) -> Shard | None:
    """The slice this run grades: --shard I/N, else the job engine's variables, else none."""
    if args.shard is not None:
        if args.shards is not None:
            raise KitError("--shard and --shards are both given.", "Pass only --shard I/N.")
        return shards.parse_shard(args.shard)
    return shards.from_environment(os.environ, args.shards)


def find_submissions(args: argparse.Namespace) -> list[Submission]:
    """Every submission under SUBMISSIONS (as --assignment, if given), or a refusal."""
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
    return submissions


def settings_of(args: argparse.Namespace) -> GradeSettings:
    # Loaded here, not with this module: `attnkit grade` starts the graders' server first.
    from ..grading.pipeline import GradeSettings

    secret = per_student.resolve(args)
    options = run_manifest.options_of(args)
    return GradeSettings(
        course_secret=secret,
        stamp=run_manifest.stamp(run_manifest.hidden_tests_fingerprint(), options),
        call_timeout=args.timeout,
        budget=args.budget,
        memory_mb=args.memory_mb,
        feedback=args.feedback,
        cell_timeout=args.cell_timeout,
        sandbox=not args.no_sandbox,
        sandbox_user=args.sandbox_user,
    )


def choose_isolation(args: argparse.Namespace, settings: GradeSettings) -> None:
    """Check, before any grading, that the chosen isolation holds on this machine; refuse
    with the fix rather than record every submission as an error. Sets the grader count."""
    from ..sandbox import user as sandbox_user
    from ..sandbox import zygote as sandbox

    if args.jobs is None and not args.sandbox_user:
        # The cores this process may run on: a Slurm or Kubernetes task is given fewer
        # than the machine has.
        args.jobs = len(os.sched_getaffinity(0)) or 1
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
        # students' files, OUT and the course secret from a submission: refuse to start
        # unless they do.
        secret = [args.course_secret] if getattr(args, "course_secret", None) else []
        sandbox_user.check_sandbox_user(args.sandbox_user, (args.submissions, args.out, *secret))
        print(f"sandbox: {sandbox.level_of(settings.sandbox_settings())}")
    else:
        level = sandbox.check_sandbox(sandbox.SandboxSettings())
        print(f"sandbox: {level}")


def names_matplotlib(submissions: list[Submission]) -> bool:
    """Whether any of the files names matplotlib (or pylab): only then do the sandboxes load
    it before forking (see GradeSettings.plots). Each file is read as the grader reads it
    (read_submission_file: no link followed, no pipe waited on), if it is no bigger than a
    submission's code may be; one that is bigger or cannot be read counts as naming it, one
    that discovery refused is never graded."""
    for submission in submissions:
        if submission.problem is not None:
            continue
        try:
            if os.lstat(submission.path).st_size > MAX_SUBMISSION_BYTES:
                return True  # too big to read through here: the sandboxes load it
            data = read_submission_file(submission.path)
        except (Refused, OSError, ValueError, MemoryError):
            return True  # the verdict only changes how fast: the sandboxes load it
        if b"matplotlib" in data or b"pylab" in data:
            return True
    return False


def grade_into(
    args: argparse.Namespace,
    submissions: list[Submission],
    settings: GradeSettings,
    manifest: run_manifest.ClassManifest,
) -> tuple[RunOutcome, list[Submission], list[dict[str, Any]]]:
    """Grade what is not graded yet into OUT, with a progress bar, then rebuild the
    gradebook files (unless this is one shard of the class: a slice has none), with the
    class's late policy applied: (how the run went, what has no result, the records)."""
    from tqdm import tqdm

    todo = results.pending(submissions, args.out, settings.feedback, args.force, settings.stamp)
    settings = dataclasses.replace(settings, plots=names_matplotlib(todo))
    skipped = len(submissions) - len(todo)
    if skipped:
        print(f"{skipped} submission(s) already graded in {args.out}: skipped (--force regrades)")
    progress = tqdm(
        total=len(todo), unit="submission", desc="grading", disable=None, file=raw(sys.stderr)
    )
    from .supervisor import grade_all

    with progress as bar:
        outcome = grade_all(todo, args.out, settings, args.jobs, progress=bar.update)
    absent = results.missing(submissions, args.out, settings.stamp)
    # Only current results: a submission the grader failed on, or whose result is of an
    # older file, is left out of the gradebook (and named), never written as a 0.
    left_out = {id(s) for s in absent}
    paths = results.result_paths(args.out, [s for s in submissions if id(s) not in left_out])
    adjust = late.gradebook_adjuster(manifest, args.out)
    if manifest.shard is not None:
        return outcome, absent, results.collect(paths, adjust)
    try:
        records = results.write_gradebook(args.out, paths, adjust)
    except OSError as exc:
        if absent:
            report_missing(absent, outcome.lost, args.out, settings.stamp)
        raise KitError(
            results.disk_advice(args.out / "grades.json", exc) + ".",
            "grades.json and grades.csv were left as they were (both old, never half-written).",
        ) from None
    return outcome, absent, records


def start_class(
    args: argparse.Namespace, submissions: list[Submission], shard: Shard | None
) -> run_manifest.ClassManifest:
    """Write OUT's class.json (the whole class, the options, the hidden tests' fingerprint)
    before grading. Results graded with other hidden tests or options are not current (each
    result is stamped with what it was graded with), so they are graded again, never mixed."""
    manifest = run_manifest.of_run(args, submissions, shard)
    previous = run_manifest.read_if_any(args.out)
    if previous is not None and previous.stamp != manifest.stamp:
        print(
            f"the hidden tests, the kit or the grading options changed since {args.out} was "
            "graded: its results are graded again"
        )
    before = None if previous is None else previous.options.get("late_policy")
    if before is not None and manifest.options["late_policy"] is None:
        print(
            f"note: {args.out} was graded with a late policy and this run has none: its "
            "gradebook now holds the raw scores (pass --late-policy again to keep penalties)"
        )
    elif before is not None and before != manifest.options["late_policy"]:
        print(f"note: the late policy changed: {args.out}'s gradebook is rewritten with it")
    run_manifest.write(args.out, manifest)
    return manifest


def run(args: argparse.Namespace) -> int:
    """Grade submissions in isolated workers; write OUT/grades.json and OUT/grades.csv
    (or, for one shard of the class, its results in OUT/shard-I-of-N)."""
    from attnkit_data.verdict import locate_verdict

    shard = choose_shard(args)
    per_student.resolve(args)
    problem = run_manifest.option_problem(run_manifest.options_of(args))
    if problem is not None:
        raise KitError(
            f"the grading options are not usable: {problem}.",
            "Give --timeout, --budget, --memory-mb and --cell-timeout as numbers above 0.",
        )
    # Ids of files of no known assignment are digests of their paths: the same however
    # SUBMISSIONS is typed (and from any working folder, as shards and regrades run).
    args.submissions = Path(os.path.abspath(args.submissions))
    start_grader_server()  # loads PyTorch meanwhile: the checks below need no grader
    submissions = find_submissions(args)
    everyone = submissions
    if shard is not None:
        print(f"grading {shard}")
        submissions = shards.slice_of(submissions, shard, run_manifest.submission_id)
        args.out = args.out / shard.folder
    settings = settings_of(args)
    # The hidden suites feed real dataloader batches of the lesson text: find (or fetch
    # and verify) it once, now, rather than fail every submission on it.
    locate_verdict(progress=False)
    choose_isolation(args, settings)
    with results.exclusive(args.out):
        manifest = start_class(args, everyone, shard)
        outcome, absent, records = grade_into(args, submissions, settings, manifest)
        if args.feedback:
            from . import feedback

            reports = feedback.write_feedback(args.out)
    print(results.summary_table(records))
    if shard is None:
        print(f"wrote {args.out / 'grades.json'} and {args.out / 'grades.csv'}")
    else:
        print(
            f"{shard}: {len(submissions) - len(absent)} of {len(submissions)} submissions "
            f"have a result in {args.out}; when every shard is done, run "
            f"`attnkit merge {args.out.parent}`"
        )
    if args.feedback:
        print(f"wrote {len(reports)} feedback reports (HTML and text) in {args.out / 'feedback'}")
    if outcome.interrupted:
        print(
            "interrupted: the results so far are saved; run the same command to resume",
            file=sys.stderr,
        )
        return 130
    if shard is None and args.publish:
        publish_to_nbgrader(args.gradebook, args.submissions, records)
    unreadable = report_late(manifest, records)
    if absent:
        report_missing(absent, outcome.lost, args.out, settings.stamp)
        return 1
    return UNREADABLE_TIMES if unreadable else 0


UNREADABLE_TIMES = 3
"""The exit status of a run that graded every submission and wrote the gradebook, but whose
late policy could not read some submission times (each is named; the raw score stands)."""


def class_records(out: Path, manifest: run_manifest.ClassManifest) -> list[dict[str, Any]]:
    """The class's rows as its gradebook holds them (its late policy applied): what a merge
    or an accepted regrade hands to nbgrader."""
    paths = [out / m.result for m in manifest.members]
    return results.collect(paths, late.gradebook_adjuster(manifest, out))


def report_late(manifest: run_manifest.ClassManifest, records: list[dict[str, Any]]) -> int:
    """Say what the late policy did, name every submission time that could not be read (by
    its file and line: the run then exits :data:`UNREADABLE_TIMES`), every submission with
    no recorded time, and every extension that names no student; the count unread."""
    if manifest.options["late_policy"] is None:
        return 0
    policy = late.policy_from_dict(manifest.options["late_policy"])
    verdicts = [r["late"] for r in records if "late" in r]
    penalised = sum(v["penalty_percent"] > 0 for v in verdicts)
    print(f"late policy: {penalised} of {len(verdicts)} graded submission(s) lost points")
    students = {r["student"] for r in records}
    for student in late.extensions_for_no_one(policy, students):
        print(f"note: the late policy extends {one_line(student)!r}, who handed nothing in")
    untimed = [r for r in records if r.get("late", {}).get("status") == "no time recorded"]
    if untimed:
        names = ", ".join(one_line(str(r["student"])) for r in untimed[:10])
        more = f" and {len(untimed) - 10} more" if len(untimed) > 10 else ""
        print(
            f"note: {len(untimed)} submission(s) have no recorded submission time, so the late "
            f"policy took nothing from them: {names}{more} (nbgrader's timestamp.txt is read "
            "only in a folder named submitted/)"
        )
    unreadable = [r for r in records if r.get("late", {}).get("status") == "unreadable time"]
    for record in unreadable:
        who = f"{record['student']} ({record['assignment']})"
        print(
            f"LATE POLICY: {one_line(who)}: {one_line(record['late']['reason'])}", file=sys.stderr
        )
    if unreadable:
        print(
            "Each student keeps the raw score until then. Fix those files (nbgrader writes one "
            "line: the time) and run the same command again: nothing is graded twice.",
            file=sys.stderr,
        )
    return len(unreadable)


def publish_to_nbgrader(
    gradebook: Path | None, submissions: Path, records: list[dict[str, Any]]
) -> None:
    """Write the grades into the nbgrader course's gradebook, where there is one: the
    course given with --gradebook, or the one SUBMISSIONS is (or holds submitted/ for)."""
    from ..platforms import nbgrader_gradebook

    course = gradebook or nbgrader_gradebook.find_course(submissions)
    if course is not None:
        for note in nbgrader_gradebook.push_grades(course, records):
            print(f"note: {one_line(note)}")
        print(f"grades written to the nbgrader gradebook of {course}")


def report_missing(
    absent: list[Submission], lost: dict[Path, str], out: Path, stamp: str | None = None
) -> None:
    """Name every submission the run could not record, and why; the run then exits 1."""
    print(
        f"INCOMPLETE: {len(absent)} submission(s) have no result, so grades.json and "
        "grades.csv leave them out:",
        file=sys.stderr,
    )
    for submission in absent:
        path = results.result_path(out, submission)
        why = lost.get(path) or results.why_not_current(path, submission.sha256, stamp)
        where = one_line(str(submission.path))
        print(f"  {submission.student!r} ({where}): {one_line(str(why))}", file=sys.stderr)
    print("Run the same command again to grade them; graded work is kept.", file=sys.stderr)
