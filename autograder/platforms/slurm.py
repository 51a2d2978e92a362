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

import os
import re
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from attnkit.errors import KitError

from ..classes import results, run_manifest, shards
from ..grading import per_student

SAFE_PATH = re.compile(r"[A-Za-z0-9_./+-]+", re.ASCII)
"""What a path in a ``#SBATCH`` line may hold. sbatch reads those lines without a shell:
no quoting, and ``%`` starts a pattern, so a path outside this set is refused by name."""
SAFE_VALUE = re.compile(r"[A-Za-z0-9_.:,+-]{1,64}", re.ASCII)
"""What --partition, --time and --mem may hold (``debug``, ``1-00:00:00``, ``4G``)."""


@dataclass(frozen=True)
class SlurmJob:
    """What the scripts run: the array's size and resources, and the `attnkit grade`
    arguments each task passes on (the grading options, as a one-machine run takes them)."""

    out: Path
    shards: int
    time: str = "01:00:00"
    cpus: int = 4
    mem: str | None = None
    partition: str | None = None
    submissions: Path | None = None
    regrade: bool = False
    """Regrade OUT's class (attnkit regrade) instead of grading SUBMISSIONS."""
    grade_arguments: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    """The grading flags given with other values than their defaults (a regrade takes none)."""
    seed_per_student: bool = False
    course_secret: Path | None = None


def safe(value: str, pattern: re.Pattern[str], what: str) -> str:
    if pattern.fullmatch(value) is None:
        raise KitError(
            f"{what} {value!r} cannot go into an #SBATCH line (sbatch reads those without "
            "quoting).",
            f"Use only the characters {pattern.pattern} in {what}.",
        )
    return value


def header(name: str, log: str, job: SlurmJob, array: bool) -> list[str]:
    lines = ["#!/bin/bash", f"#SBATCH --job-name={name}", f"#SBATCH --output={log}"]
    if array:
        memory = job.mem or f"{2 * job.cpus}G"
        lines += [
            f"#SBATCH --array=1-{job.shards}",
            f"#SBATCH --cpus-per-task={job.cpus}",
            f"#SBATCH --mem={safe(memory, SAFE_VALUE, '--mem')}",
            f"#SBATCH --time={safe(job.time, SAFE_VALUE, '--time')}",
        ]
    if job.partition:
        lines.append(f"#SBATCH --partition={safe(job.partition, SAFE_VALUE, '--partition')}")
    return [*lines, "set -euo pipefail"]


def commands_for(job: SlurmJob, out: Path) -> tuple[list[str], list[str]]:
    """The shard task's command and the merge job's, as argument lists."""
    kit = [sys.executable, "-m", "attnkit"]
    secret = secret_options(job, out)
    if job.regrade and job.changed:
        raise KitError(
            f"--regrade grades OUT's class again with the options its class.json records "
            f"(the late policy included), so it takes no {', '.join(job.changed)}.",
            "To grade with other options, or apply another policy, use `attnkit grade ...` "
            "with them (nothing is graded twice), then regrade.",
        )
    if job.regrade:
        regrade = [*kit, "regrade", str(out), *secret]
        return [*regrade, "--shards", str(job.shards)], regrade
    if job.submissions is None:
        raise KitError("SUBMISSIONS is missing.", "Give the folder to grade (or --regrade).")
    grade = [*kit, "grade", os.path.abspath(job.submissions), "--out", str(out)]
    grade += ["--shards", str(job.shards), *job.grade_arguments]
    return grade + secret, [*kit, "merge", str(out)]


def secret_options(job: SlurmJob, out: Path) -> list[str]:
    """What the scripts pass for per-student inputs: the secret's file, never the secret.
    A regrade has them on when OUT's class.json says so."""
    wanted = job.seed_per_student
    if job.regrade:
        if wanted:
            raise KitError(
                "--regrade takes --seed-per-student from OUT's class.json.",
                "Pass only --course-secret FILE.",
            )
        recorded = run_manifest.read_if_any(out)
        wanted = recorded is not None and bool(recorded.options.seed_per_student)
    if not wanted:
        if job.course_secret is not None:
            raise per_student.CourseSecretError(
                "--course-secret is only used with --seed-per-student (or to regrade a class "
                "graded with it)."
            )
        return []
    if job.course_secret is None:
        raise per_student.CourseSecretError(
            "the scripts read the course secret from a file, never from this shell's "
            f"${per_student.SECRET_VARIABLE}.",
            "Pass --course-secret FILE: a file only you can read, at a path the nodes see.",
        )
    path = Path(os.path.abspath(job.course_secret))
    per_student.from_file(path)  # refused now, not on the cluster
    flag = [] if job.regrade else ["--seed-per-student"]
    return [*flag, "--course-secret", str(path)]


def write_scripts(job: SlurmJob) -> Path:
    """Write OUT/slurm/shards.sbatch, merge.sbatch and submit; their folder."""
    out = Path(os.path.abspath(job.out))
    safe(str(out), SAFE_PATH, "OUT")
    shards.checked(1, job.shards, "--shards")
    if not 1 <= job.cpus <= 1024:
        raise KitError(f"--cpus {job.cpus} is not a core count.", "Pass 1 to 1024.")
    if job.regrade and job.submissions is not None:
        raise KitError("--regrade grades OUT's class again: it takes no SUBMISSIONS.")
    grade, merge = commands_for(job, out)
    folder = out / "slurm"
    (out / "logs").mkdir(parents=True, exist_ok=True)
    name = "attnkit-regrade" if job.regrade else "attnkit-grade"
    logs = f"{out}/logs/{'regrade-' if job.regrade else ''}"
    log = f"{logs}shard-%a-of-{job.shards}.out"
    task = shlex.join(grade) + ' --jobs "${SLURM_CPUS_PER_TASK:-1}"'
    shard_script = [
        *header(name, log, job, array=True),
        "# One slice of the class per array task: SLURM_ARRAY_TASK_ID is the shard, 1 to "
        f"{job.shards}.",
        "# Rerun one with: sbatch --array=I " + shlex.quote(str(folder / "shards.sbatch")),
        f"exec {task}",
    ]
    merge_script = [
        *header(f"{name}-merge", f"{logs}merge.out", job, array=False),
        "# After every shard: one gradebook, or the names of what is missing (exit 1).",
        f"exec {shlex.join(merge)}",
    ]
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
