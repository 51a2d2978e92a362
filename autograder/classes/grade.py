"""Grading a class: find the submissions, choose the isolation, grade them all under the
supervisor, write the gradebook, and say plainly what could not be graded.

:func:`grade` is the one entry point: ``attnkit grade``, a Slurm task and ``attnkit regrade``
all call it with a :class:`GradeRequest`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnkit.errors import KitError
from attnkit.terminal import one_line, raw

from ..grading.options import GradeOptions
from ..grading.per_student import CourseSecret
from ..grading.submission import (
    MAX_SUBMISSION_BYTES,
    Refused,
    Submission,
    read_submission_file,
)
from . import discovery, late, results, run_manifest, selection, shards
from .grader_server import start_grader_server
from .shards import Shard

if TYPE_CHECKING:
    from ..grading.pipeline import GradeSettings
    from .supervisor import RunOutcome


@dataclass(frozen=True)
class GradeRequest:
    """One grading run: what to grade, where its results go, and how."""

    submissions: Path
    out: Path
    options: GradeOptions = field(default_factory=GradeOptions)
    assignment: str | None = None
    """Every file is graded as this assignment (a slug), whatever its name says."""
    jobs: int | None = None
    """Grader processes (None: the cores this process may run on; 1 with a sandbox user)."""
    force: bool = False
    """Grade again what already has a current result."""
    shard: Shard | None = None
    """Grade only this slice of the class, into OUT/shard-I-of-N."""
    secret: CourseSecret | None = None
    """The course secret, when ``options.seed_per_student`` holds its digest."""
    only: tuple[str, ...] = ()
    """Grade again only these students' submissions (their exact ids); the others keep
    their results, so their gradebook rows do not change."""
    instructor_files: tuple[Path, ...] = ()
    """The instructor's files the command line named (a late policy, a gradebook, the course
    secret): a sandbox user must be unable to read them, as SUBMISSIONS and OUT."""


@dataclass(frozen=True)
class GradeRun:
    """How a grading run ended: its exit status, the gradebook's rows, and whether they are
    the whole class's (no shard, not interrupted), to hand to an nbgrader gradebook."""

    code: int
    records: list[dict[str, Any]]
    complete: bool


def find_submissions(request: GradeRequest) -> list[Submission]:
    """Every submission under SUBMISSIONS (as the request's assignment, if given), or a
    refusal."""
    if not request.submissions.exists():
        raise KitError(f"{request.submissions} does not exist.", "Pass a folder of submissions.")
    submissions = discovery.discover(request.submissions, request.assignment)
    if not submissions:
        raise KitError(
            f"found no submissions (.ipynb or .py files) under {request.submissions}.",
            "Give a folder per student, nbgrader's submitted/ folder, or notebook files.",
        )
    return submissions


def settings_of(request: GradeRequest) -> GradeSettings:
    # Loaded here, not with this module: `attnkit grade` starts the graders' server first.
    from ..grading.pipeline import GradeSettings

    return GradeSettings(
        options=request.options,
        course_secret=request.secret,
        stamp=run_manifest.stamp(run_manifest.hidden_tests_fingerprint(), request.options),
    )


def choose_isolation(request: GradeRequest, settings: GradeSettings) -> int:
    """Check, before any grading, that the chosen isolation holds on this machine; refuse
    with the fix rather than record every submission as an error. The grader count."""
    from ..sandbox import user as sandbox_user
    from ..sandbox import zygote as sandbox

    options = request.options
    jobs = request.jobs
    if options.no_sandbox:
        print(
            "WARNING: --no-sandbox: submissions run WITHOUT isolation. Use this for trusted "
            "code only; every result records it.",
            file=sys.stderr,
        )
    elif options.sandbox_user:
        if jobs is not None and jobs > 1:
            # Every grader's workers would share the one uid, and could signal each other.
            raise KitError(
                "--sandbox-user grades with one grader process: workers of parallel graders "
                "would share that user's uid.",
                "Pass --jobs 1 with --sandbox-user (or use bubblewrap, which has no such limit).",
            )
        if not request.out.exists():
            request.out.mkdir(mode=0o700, parents=True)
        # Without namespaces, file permissions alone keep the references, the other
        # students' files, OUT and the course secret from a submission: refuse to start
        # unless they do.
        secret = [request.secret.path] if request.secret and request.secret.path else []
        private = (request.submissions, request.out, *secret, *request.instructor_files)
        sandbox_user.claim(options.sandbox_user, private)
        print(f"sandbox: {sandbox.level_of(settings.sandbox_settings())}")
        return 1
    else:
        level = sandbox.check_sandbox(sandbox.SandboxSettings())
        print(f"sandbox: {level}")
    # The cores this process may run on: a Slurm or Kubernetes task is given fewer than the
    # machine has.
    return jobs if jobs is not None else (len(os.sched_getaffinity(0)) or 1)


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
    request: GradeRequest,
    out: Path,
    submissions: list[Submission],
    settings: GradeSettings,
    manifest: run_manifest.ClassManifest,
    jobs: int,
) -> tuple[RunOutcome, list[Submission], list[dict[str, Any]]]:
    """Grade what is not graded yet into ``out``, with a progress bar, then rebuild the
    gradebook files (unless this is one shard of the class: a slice has none), with the
    class's late policy applied: (how the run went, what has no result, the records)."""
    from tqdm import tqdm

    if request.only:
        todo = selection.only_these(submissions, request.only)
        print(f"grading only {len(todo)} submission(s) of {len(submissions)} (--only)")
    else:
        todo = results.pending(
            submissions, out, request.options.feedback, request.force, settings.stamp
        )
    settings = dataclasses.replace(settings, plots=names_matplotlib(todo))
    skipped = len(submissions) - len(todo)
    if skipped and not request.only:
        print(f"{skipped} submission(s) already graded in {out}: skipped (--force regrades)")
    from .supervisor import grade_all

    if raw(sys.stderr).isatty():
        progress = tqdm(total=len(todo), unit="submission", desc="grading", file=raw(sys.stderr))
        with progress as bar:
            outcome = grade_all(todo, out, settings, jobs, progress=bar.update)
    else:  # a log (Slurm, nohup, CI): a line now and then rather than a bar it cannot show
        outcome = grade_all(todo, out, settings, jobs, progress=ProgressLines(len(todo)).update)
    absent = results.missing(submissions, out, settings.stamp)
    # Only current results: a submission the grader failed on, whose result is of an older
    # file, or that an interrupt left ungraded is an INCOMPLETE row with the reason, never
    # a 0 and never missing from the gradebook.
    left_out = {id(s) for s in absent}
    paths = results.result_paths(out, [s for s in submissions if id(s) not in left_out])
    adjust = late.gradebook_adjuster(manifest, out)
    if manifest.shard is not None:
        return outcome, absent, results.collect(paths, adjust)
    unfinished = [
        results.incomplete_row(s, unfinished_reason(s, outcome, out, settings.stamp))
        for s in absent
    ]
    try:
        records = results.write_gradebook(out, paths, adjust, unfinished)
        if not outcome.interrupted:
            report_pruned(selection.prune(out, submissions), out)
    except OSError as exc:
        if absent:
            report_missing(absent, outcome.lost, out, settings.stamp)
        raise KitError(
            results.disk_advice(out / "grades.json", exc) + ".",
            "grades.json and grades.csv were left as they were (both old, never half-written).",
        ) from None
    return outcome, absent, records


PROGRESS_EVERY = 30.0
"""Seconds between two progress lines when stderr is not a terminal."""


class ProgressLines:
    """Progress as lines, for a log: when grading starts, every :data:`PROGRESS_EVERY`
    seconds, and when the last submission is done."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0
        self.started = self.said = time.monotonic()
        if total:
            print(f"grading {total} submission(s)", file=sys.stderr, flush=True)

    def update(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if now - self.said >= PROGRESS_EVERY or self.done == self.total:
            self.said = now
            minutes, seconds = divmod(int(now - self.started), 60)
            print(
                f"graded {self.done} of {self.total} submission(s) in {minutes}:{seconds:02d}",
                file=sys.stderr,
                flush=True,
            )


def report_pruned(removed: list[Path], out: Path) -> None:
    """Name the result files and reports removed because no submission owns them now."""
    if removed:
        names = ", ".join(str(p.relative_to(out)) for p in removed[:10])
        more = f" and {len(removed) - 10} more" if len(removed) > 10 else ""
        print(
            f"removed {len(removed)} result file(s) and report(s) of submissions no longer in "
            f"the class (a file renamed or removed): {one_line(names)}{more}"
        )


def unfinished_reason(
    submission: Submission, outcome: RunOutcome, out: Path, stamp: str | None
) -> str:
    """Why ``submission`` has no current result after this run, in words."""
    path = results.result_path(out, submission)
    why = outcome.lost.get(path) or results.why_not_current(path, submission.sha256 or "", stamp)
    if outcome.interrupted and (why is None or why == "no result was recorded"):
        return "not graded: the run was interrupted first; run the same command to grade it"
    return str(why or "no result was recorded")


def start_class(
    request: GradeRequest, out: Path, submissions: list[Submission]
) -> run_manifest.ClassManifest:
    """Write OUT's class.json (the whole class, the options, the hidden tests' fingerprint)
    before grading. Results graded with other hidden tests or options are not current (each
    result is stamped with what it was graded with), so they are graded again, never mixed."""
    manifest = run_manifest.of_run(
        request.submissions, request.assignment, request.options, submissions, request.shard
    )
    previous = run_manifest.read_if_any(out)
    if previous is not None and previous.stamp != manifest.stamp:
        print(
            f"the hidden tests, the kit or the grading options changed since {out} was "
            "graded: its results are graded again"
        )
    before = None if previous is None else previous.options.late_policy
    if before is not None and manifest.options.late_policy is None:
        print(
            f"note: {out} was graded with a late policy and this run has none: its "
            "gradebook now holds the raw scores (pass --late-policy again to keep penalties)"
        )
    elif before is not None and before != manifest.options.late_policy:
        print(f"note: the late policy changed: {out}'s gradebook is rewritten with it")
    run_manifest.write(out, manifest)
    return manifest


def checked_request(request: GradeRequest) -> GradeRequest:
    """The request with its options checked and SUBMISSIONS made absolute: ids of files of
    no known assignment are digests of their paths, the same however SUBMISSIONS is typed
    (and from any working folder, as shards and regrades run)."""
    problem = run_manifest.option_problem(request.options.to_dict())
    if problem is not None:
        raise KitError(
            f"the grading options are not usable: {problem}.",
            "Give --timeout, --budget, --memory-mb and --cell-timeout as numbers above 0.",
        )
    secret = request.secret
    digest = request.options.seed_per_student
    if (secret is None) != (digest is None) or (secret and secret.digest != digest):
        raise KitError("the course secret does not match --seed-per-student's digest.")
    return dataclasses.replace(request, submissions=Path(os.path.abspath(request.submissions)))


def grade(request: GradeRequest) -> GradeRun:
    """Grade submissions in isolated workers; write OUT/grades.json and OUT/grades.csv
    (or, for one shard of the class, its results in OUT/shard-I-of-N). Interrupted (Ctrl-C,
    SIGTERM) at any moment, it leaves the gradebook it found, or a whole new one."""
    request = checked_request(request)
    written: list[list[dict[str, Any]]] = []
    try:
        return grade_class(request, written)
    except KeyboardInterrupt:
        if request.shard is not None:
            return interrupted(request.out / request.shard.folder, None)
        return interrupted(request.out, written[-1] if written else None)


def grade_class(request: GradeRequest, written: list[list[dict[str, Any]]]) -> GradeRun:
    """:func:`grade`'s run; the gradebook's rows are appended to ``written`` once written."""
    from attnkit_data.verdict import locate_verdict

    start_grader_server()  # loads PyTorch meanwhile: the checks below need no grader
    everyone = submissions = find_submissions(request)
    shard, out = request.shard, request.out
    if shard is not None:
        print(f"grading {shard}")
        submissions = shards.slice_of(submissions, shard, run_manifest.shard_key)
        out = out / shard.folder
    settings = settings_of(request)
    # The hidden suites feed real dataloader batches of the lesson text: find (or fetch
    # and verify) it once, now, rather than fail every submission on it.
    locate_verdict(progress=False)
    jobs = choose_isolation(dataclasses.replace(request, out=out), settings)
    with results.exclusive(out):
        manifest = start_class(request, out, everyone)
        outcome, absent, records = grade_into(request, out, submissions, settings, manifest, jobs)
        written.append(records)
        if request.options.feedback:
            from . import feedback

            reports = feedback.write_feedback(out)
    print(results.summary_table(records))
    if shard is None:
        print(f"wrote {out / 'grades.json'} and {out / 'grades.csv'}")
    else:
        print(
            f"{shard}: {len(submissions) - len(absent)} of {len(submissions)} submissions "
            f"have a result in {out}; when every shard is done, run "
            f"`attnkit merge {out.parent}`"
        )
    if request.options.feedback:
        print(f"wrote {len(reports)} feedback reports (HTML and text) in {out / 'feedback'}")
    if outcome.interrupted:
        return interrupted(out, records if shard is None else None)
    unreadable = report_late(manifest, records)
    if absent:
        report_missing(absent, outcome.lost, out, settings.stamp)
        return GradeRun(1, records, complete=shard is None)
    return GradeRun(UNREADABLE_TIMES if unreadable else 0, records, complete=shard is None)


def interrupted(out: Path, records: list[dict[str, Any]] | None) -> GradeRun:
    """Say what an interrupted run left: the gradebook it wrote (``records``: every
    discovered submission, those not graded yet marked INCOMPLETE), or the one it found."""
    if records is not None:
        unfinished = sum(r["status"] == results.INCOMPLETE for r in records)
        left = (
            f"{out / 'grades.json'} and grades.csv list all {len(records)} submission(s), "
            f"{unfinished} of them INCOMPLETE (not graded yet, each with the reason)"
        )
    elif (out / "grades.json").exists():
        left = f"{out / 'grades.json'} and grades.csv were left as they were, both from before"
    else:
        left = f"no gradebook was written in {out}"
    print(
        f"interrupted: {left}; the results so far are saved: run the same command to resume",
        file=sys.stderr,
    )
    return GradeRun(130, records or [], complete=False)


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
    if manifest.options.late_policy is None:
        return 0
    policy = late.policy_from_dict(manifest.options.late_policy)
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


def report_missing(
    absent: list[Submission], lost: dict[Path, str], out: Path, stamp: str | None = None
) -> None:
    """Name every submission the run could not record, and why; the run then exits 1."""
    print(
        f"INCOMPLETE: {len(absent)} submission(s) have no result, so grades.json and "
        "grades.csv list them as INCOMPLETE, with no score:",
        file=sys.stderr,
    )
    for submission in absent:
        path = results.result_path(out, submission)
        why = lost.get(path) or results.why_not_current(path, submission.sha256, stamp)
        where = one_line(str(submission.path))
        print(f"  {submission.student!r} ({where}): {one_line(str(why))}", file=sys.stderr)
    print("Run the same command again to grade them; graded work is kept.", file=sys.stderr)
