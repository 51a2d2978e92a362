"""``attnkit grade``, ``merge``, ``regrade`` and ``slurm``: their options, and the library
calls they make (:mod:`attnkit_autograder.classes`, :mod:`attnkit_autograder.platforms.slurm`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from attnkit.errors import KitError

from . import options


def add_grade(commands: Any) -> None:
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
    options.add_grade_options(grade)
    options.add_secret_option(grade)
    options.add_shard_options(grade)
    options.add_only_option(grade)
    grade.set_defaults(handler=run_grade)


def run_grade(args: argparse.Namespace) -> int:
    from ..classes.grade import GradeRequest, grade
    from ..platforms import nbgrader_gradebook

    shard = options.shard_of(args)
    secret = options.secret_of(args)
    request = GradeRequest(
        submissions=args.submissions,
        out=args.out,
        options=options.options_of(args, secret),
        assignment=options.assignment_of(args.assignment),
        jobs=args.jobs,
        force=args.force,
        shard=shard,
        secret=secret,
        instructor_files=options.instructor_files(args),
        only=tuple(args.only),
    )
    run = grade(request)
    if run.complete:
        nbgrader_gradebook.publish(request.options.gradebook, args.submissions, run.records)
    return run.code


def add_merge(commands: Any) -> None:
    merge = commands.add_parser(
        "merge",
        help="(instructors) join the shards of a class (attnkit grade --shard) into one gradebook",
        description="Join the shard folders of one class into OUT/grades.json and "
        "OUT/grades.csv, the same bytes a one-machine `attnkit grade` writes. Every missing "
        "shard or submission is named, and then nothing is written.",
    )
    merge.add_argument(
        "paths",
        type=Path,
        nargs="+",
        metavar="PATH",
        help="a shard folder (shard-I-of-N), or a folder holding them (OUT)",
    )
    merge.add_argument(
        "--out",
        type=Path,
        metavar="OUT",
        help="where the gradebook goes (default: the folder holding the shard folders)",
    )
    merge.set_defaults(handler=run_merge)


def run_merge(args: argparse.Namespace) -> int:
    from ..classes import grade, merge, results
    from ..platforms import nbgrader_gradebook

    out, manifest = merge.merge(args.paths, args.out)
    records = grade.class_records(out, manifest)
    print(results.summary_table(records))
    print(f"wrote {out / 'grades.json'} and {out / 'grades.csv'}")
    unreadable = grade.report_late(manifest, records)
    nbgrader_gradebook.publish(manifest.options.gradebook, Path(manifest.submissions), records)
    return grade.UNREADABLE_TIMES if unreadable else 0


def add_regrade(commands: Any) -> None:
    regrade = commands.add_parser(
        "regrade",
        help="(instructors) grade OUT's class again with the installed hidden tests and "
        "report whose grade moved; --accept makes the new grades current",
        description="Grade the class of OUT (a run of attnkit grade, or a merge) again "
        "with the installed hidden tests, into OUT/regrade, and write the change report "
        "OUT/regrade/changes.txt (and .json). The old gradebook is kept until --accept.",
    )
    regrade.add_argument("out", type=Path, metavar="OUT", help="the --out of the first grading")
    regrade.add_argument(
        "--accept",
        action="store_true",
        help="make the regrade current: the old gradebook moves to OUT/previous/<time>/",
    )
    regrade.add_argument("--jobs", type=int, default=None, help="grader processes")
    options.add_shard_options(regrade)
    options.add_only_option(regrade)
    options.add_grade_options(regrade, ("no_sandbox", "sandbox_user"))
    options.add_secret_option(regrade)
    regrade.set_defaults(handler=run_regrade)


def run_regrade(args: argparse.Namespace) -> int:
    from ..classes import regrade
    from ..platforms import nbgrader_gradebook

    if args.accept:
        if args.shard is not None or args.shards is not None or args.only:
            raise KitError(
                "--accept takes no shard and no --only.",
                f"Run `attnkit regrade {args.out} --accept`.",
            )
        manifest, records = regrade.accept(args.out)
        gradebook = manifest.options.gradebook
        nbgrader_gradebook.publish(gradebook, Path(manifest.submissions), records)
        return 0
    return regrade.regrade(
        args.out,
        jobs=args.jobs,
        shard=options.shard_of(args),
        isolation={"no_sandbox": args.no_sandbox, "sandbox_user": args.sandbox_user},
        course_secret=args.course_secret,
        only=tuple(args.only),
    )


def add_slurm(commands: Any) -> None:
    slurm = commands.add_parser(
        "slurm",
        help="(instructors) write sbatch scripts that grade a class on Slurm, in N shards, "
        "then merge them into one gradebook",
        description="Write OUT/slurm/shards.sbatch (a job array of N `attnkit grade` "
        "shards), OUT/slurm/merge.sbatch (`attnkit merge`, after them) and OUT/slurm/submit, "
        "which submits both. Read and edit them, then run `bash OUT/slurm/submit`. Each task "
        "grades with the grading options given here, as `attnkit grade` takes them.",
    )
    slurm.add_argument(
        "submissions",
        type=Path,
        nargs="?",
        metavar="SUBMISSIONS",
        help="what `attnkit grade` would grade (not with --regrade)",
    )
    slurm.add_argument("--out", type=Path, required=True, metavar="OUT", help="the output folder")
    slurm.add_argument("--shards", type=int, required=True, metavar="N", help="array tasks")
    slurm.add_argument("--partition", help="the partition to run in (default: the cluster's)")
    slurm.add_argument("--time", default="01:00:00", help="time limit per task (default 1 h)")
    slurm.add_argument("--cpus", type=int, default=4, help="cores per task (default 4)")
    slurm.add_argument("--mem", default=None, help="memory per task, e.g. 8G (default: 2G a core)")
    slurm.add_argument("--assignment", help="grade every file as this assignment")
    slurm.add_argument("--force", action="store_true", help="regrade submissions already graded")
    options.add_grade_options(
        slurm, tuple(s.name for s in options.grading_options.fields() if s.metadata["passed_on"])
    )
    options.add_secret_option(slurm, environment=False)
    slurm.add_argument(
        "--regrade",
        action="store_true",
        help="regrade OUT's class (attnkit regrade) instead of grading SUBMISSIONS",
    )
    slurm.set_defaults(handler=run_slurm)


def run_slurm(args: argparse.Namespace) -> int:
    from ..classes.run_manifest import option_problem
    from ..platforms import slurm

    graded_with = options.options_of(args)
    problem = option_problem(graded_with.to_dict())
    if problem is not None:
        raise KitError(f"the grading options are not usable: {problem}.")
    assignment = options.assignment_of(args.assignment)
    arguments = options.passed_on(args)
    arguments += ["--assignment", assignment] if assignment else []
    arguments += ["--force"] if args.force else []
    changed = ["--" + name.replace("_", "-") for name in graded_with.changed()]
    changed += ["--assignment"] * bool(assignment) + ["--force"] * args.force
    job = slurm.SlurmJob(
        out=args.out,
        shards=args.shards,
        partition=args.partition,
        time=args.time,
        cpus=args.cpus,
        mem=args.mem,
        submissions=args.submissions,
        regrade=args.regrade,
        grade_arguments=tuple(arguments),
        changed=tuple(changed),
        seed_per_student=args.seed_per_student,
        course_secret=args.course_secret,
    )
    folder = slurm.write_scripts(job)
    print(f"wrote {folder / 'shards.sbatch'}, {folder / 'merge.sbatch'} and {folder / 'submit'}")
    print(f"read them (edit the #SBATCH lines for your cluster), then: bash {folder / 'submit'}")
    return 0
