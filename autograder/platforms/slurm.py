"""``attnkit slurm``: the sbatch scripts that grade a class on a Slurm cluster.

Three plain files in ``OUT/slurm/``, for whoever runs them to read and edit first:

* ``shards.sbatch``: a job array, one task per shard. Each task runs ``attnkit grade``
  (or ``attnkit regrade``) with ``--shards N``; the task's ``SLURM_ARRAY_TASK_ID`` says
  which slice it grades, so ``sbatch --array=3 shards.sbatch`` reruns the third alone.
* ``merge.sbatch``: ``attnkit merge`` (or ``attnkit regrade``), which writes the one
  gradebook, or names what is missing and fails.
* ``submit``: submits the array, then the merge as a job that starts after every task has
  ended (``afterany``: a failed shard must still be reported by the merge, by name).

Logs go to ``OUT/logs/``. The tasks run the kit with this Python, so the cluster's nodes
must see it, SUBMISSIONS and OUT at the same paths (a shared file system), as they see
a home folder.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

from attnkit.errors import KitError

from ..classes import late, results, run_manifest, shards
from ..grading import per_student

SAFE_PATH = re.compile(r"[A-Za-z0-9_./+-]+", re.ASCII)
"""What a path in a ``#SBATCH`` line may hold. sbatch reads those lines without a shell:
no quoting, and ``%`` starts a pattern, so a path outside this set is refused by name."""
SAFE_VALUE = re.compile(r"[A-Za-z0-9_.:,+-]{1,64}", re.ASCII)
"""What --partition, --time and --mem may hold (``debug``, ``1-00:00:00``, ``4G``)."""


def add_parser(commands: Any) -> None:
    slurm = commands.add_parser(
        "slurm",
        help="(instructors) write sbatch scripts that grade a class on Slurm, in N shards, "
        "then merge them into one gradebook",
        description="Write OUT/slurm/shards.sbatch (a job array of N `attnkit grade` "
        "shards), OUT/slurm/merge.sbatch (`attnkit merge`, after them) and OUT/slurm/submit, "
        "which submits both. Read and edit them, then run `bash OUT/slurm/submit`.",
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
    slurm.add_argument("--feedback", action="store_true", help="also write feedback reports")
    slurm.add_argument(
        "--late-policy", type=Path, metavar="POLICY.toml", help="apply this late policy"
    )
    slurm.add_argument(
        "--regrade",
        action="store_true",
        help="regrade OUT's class (attnkit regrade) instead of grading SUBMISSIONS",
    )
    per_student.add_options(slurm, environment=False)
    slurm.set_defaults(handler=run)


def safe(value: str, pattern: re.Pattern[str], what: str) -> str:
    if pattern.fullmatch(value) is None:
        raise KitError(
            f"{what} {value!r} cannot go into an #SBATCH line (sbatch reads those without "
            "quoting).",
            f"Use only the characters {pattern.pattern} in {what}.",
        )
    return value


def header(name: str, log: str, args: argparse.Namespace, array: bool) -> list[str]:
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --output={log}"]
    if array:
        memory = args.mem or f"{2 * args.cpus}G"
        lines += [
            f"#SBATCH --array=1-{args.shards}",
            f"#SBATCH --cpus-per-task={args.cpus}",
            f"#SBATCH --mem={safe(memory, SAFE_VALUE, '--mem')}",
            f"#SBATCH --time={safe(args.time, SAFE_VALUE, '--time')}",
        ]
    if args.partition:
        lines.append(f"#SBATCH --partition={safe(args.partition, SAFE_VALUE, '--partition')}")
    return [*lines, "set -euo pipefail"]


def commands_for(args: argparse.Namespace, out: Path) -> tuple[list[str], list[str]]:
    """The shard task's command and the merge job's, as argument lists."""
    kit = [sys.executable, "-m", "attnkit"]
    secret = secret_options(args, out)
    grading = {"--assignment": args.assignment, "--feedback": args.feedback,
               "--late-policy": args.late_policy}  # fmt: skip
    given = [flag for flag, value in grading.items() if value]
    if args.regrade and given:
        raise KitError(
            f"--regrade grades OUT's class again with the options its class.json records "
            f"(the late policy included), so it takes no {', '.join(given)}.",
            "To grade with other options, or apply another policy, use `attnkit grade ...` "
            "with them (nothing is graded twice), then regrade.",
        )
    if args.regrade:
        regrade = [*kit, "regrade", str(out), *secret]
        return [*regrade, "--shards", str(args.shards)], regrade
    if args.submissions is None:
        raise KitError("SUBMISSIONS is missing.", "Give the folder to grade (or --regrade).")
    grade = [*kit, "grade", os.path.abspath(args.submissions), "--out", str(out)]
    grade += ["--shards", str(args.shards)]
    if args.assignment:
        grade += ["--assignment", args.assignment]
    if args.feedback:
        grade.append("--feedback")
    if args.late_policy is not None:
        late.read_policy(args.late_policy)  # a bad policy is named now, not on the cluster
        grade += ["--late-policy", os.path.abspath(args.late_policy)]
    return grade + secret, [*kit, "merge", str(out)]


def secret_options(args: argparse.Namespace, out: Path) -> list[str]:
    """What the scripts pass for per-student inputs: the secret's file, never the secret.
    A regrade has them on when OUT's class.json says so."""
    wanted = args.seed_per_student
    if args.regrade:
        if wanted:
            raise KitError(
                "--regrade takes --seed-per-student from OUT's class.json.",
                "Pass only --course-secret FILE.",
            )
        recorded = run_manifest.read_if_any(out)
        wanted = recorded is not None and bool(recorded.options.get("seed_per_student"))
    if not wanted:
        if args.course_secret is not None:
            raise per_student.CourseSecretError(
                "--course-secret is only used with --seed-per-student (or to regrade a class "
                "graded with it)."
            )
        return []
    if args.course_secret is None:
        raise per_student.CourseSecretError(
            "the scripts read the course secret from a file, never from this shell's "
            f"${per_student.SECRET_VARIABLE}.",
            "Pass --course-secret FILE: a file only you can read, at a path the nodes see.",
        )
    path = Path(os.path.abspath(args.course_secret))
    per_student.from_file(path)  # refused now, not on the cluster
    flag = [] if args.regrade else ["--seed-per-student"]
    return [*flag, "--course-secret", str(path)]


def write_scripts(args: argparse.Namespace) -> Path:
    out = Path(os.path.abspath(args.out))
    safe(str(out), SAFE_PATH, "OUT")
    shards.checked(1, args.shards, "--shards")
    if not 1 <= args.cpus <= 1024:
        raise KitError(f"--cpus {args.cpus} is not a core count.", "Pass 1 to 1024.")
    if args.regrade and args.submissions is not None:
        raise KitError("--regrade grades OUT's class again: it takes no SUBMISSIONS.")
    grade, merge = commands_for(args, out)
    folder = out / "slurm"
    (out / "logs").mkdir(parents=True, exist_ok=True)
    name = "attnkit-regrade" if args.regrade else "attnkit-grade"
    log = f"{out}/logs/{'regrade-' if args.regrade else ''}shard-%a-of-{args.shards}.out"
    task = shlex.join(grade) + ' --jobs "${SLURM_CPUS_PER_TASK:-1}"'
    shard_script = [
        *header(name, log, args, array=True),
        "# One slice of the class per array task: SLURM_ARRAY_TASK_ID is the shard, 1 to "
        f"{args.shards}.",
        "# Rerun one with: sbatch --array=I " + shlex.quote(str(folder / "shards.sbatch")),
        f"exec {task}",
    ]
    merge_script = [
        *header(f"{name}-merge", f"{out}/logs/{'regrade-' if args.regrade else ''}merge.out",
                args, array=False),
        "# After every shard: one gradebook, or the names of what is missing (exit 1).",
        f"exec {shlex.join(merge)}",
    ]  # fmt: skip
    submit = [
        "#!/bin/bash",
        "# Submit the shards, then the merge once they have all ended (afterany: the merge",
        "# names any shard that failed).",
        "set -euo pipefail",
        f"cd {shlex.quote(str(folder))}",
        "array=$(sbatch --parsable shards.sbatch)",
        "array=${array%%;*}",
        'merge=$(sbatch --parsable --dependency="afterany:${array}" merge.sbatch)',
        'echo "submitted the shards as job ${array} and the merge as job ${merge%%;*}"',
        f"echo {shlex.quote(f'logs: {out}/logs; the gradebook: {out}/grades.json')}",
    ]
    scripts = {
        folder / "shards.sbatch": shard_script,
        folder / "merge.sbatch": merge_script,
        folder / "submit": submit,
    }
    results.write_atomic_files({path: "\n".join(lines) + "\n" for path, lines in scripts.items()})
    for path in scripts:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return folder


def run(args: argparse.Namespace) -> int:
    folder = write_scripts(args)
    print(f"wrote {folder / 'shards.sbatch'}, {folder / 'merge.sbatch'} and {folder / 'submit'}")
    print(f"read them (edit the #SBATCH lines for your cluster), then: bash {folder / 'submit'}")
    return 0
