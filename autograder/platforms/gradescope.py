"""Package the grader as a Gradescope autograder, and speak Gradescope's results format.

``attnkit gradescope OUT.zip --assignment N`` writes a zip in the layout of Gradescope's
autograder specification: ``setup.sh`` and ``run_autograder`` at the zip's root, the kit's
source beside them (so ``/autograder/source`` holds ``pyproject.toml``):

* ``setup.sh`` runs once, as root and online, when Gradescope builds the image. It needs
  nothing but one of Gradescope's Ubuntu base images: it installs Debian's ``bubblewrap``
  (the grading sandbox) and a Python 3.11 or newer (the image's own ``python3`` where it is
  new enough, as on Ubuntu 24.04; the deadsnakes PPA's 3.11 on Ubuntu 22.04), then the CPU
  build of PyTorch from PyTorch's CPU index, the kit, and the lesson data. Grading needs no
  network afterwards.
* ``run_autograder`` runs per submission: it grades ``/autograder/submission/*.ipynb`` with
  :func:`attnkit_autograder.grading.pipeline.grade_submission` and writes
  ``/autograder/results/results.json``.

Every graded cell becomes one Gradescope test, shown ``after_published`` by default.

With ``--seed-per-student --course-secret FILE`` the zip carries a copy of the course secret
(``course-secret``, readable by root only, like the references beside it) and
``run_autograder`` grades with per-student inputs, the student being the ids Gradescope
gives in ``/autograder/submission_metadata.json`` (``users[].id``; a group's ids together).

``$ATTNKIT_AUTOGRADER_ROOT`` moves ``/autograder`` (both scripts), so the kit's test can
run them in a temporary folder; ``$ATTNKIT_SETUP_OFFLINE_SITE`` (a site-packages folder
that already holds the dependencies) and ``$ATTNKIT_SETUP_PYTHON`` make ``setup.sh`` skip
its network-only steps there.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from attnkit.errors import KitError

from ..grading.options import GradeOptions

KIT_PARTS = ("attnkit", "solutions", "autograder", "data", "pyproject.toml", "README.md")
SKIPPED_NAMES = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache"}
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
PASSED_ON = ("timeout", "budget", "memory_mb", "cell_timeout", "partial_credit")
"""The grading options ``attnkit gradescope`` takes and ``run_autograder`` grades with (its
isolation is the container's, its late policy and per-student inputs ride in the zip)."""

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root and online, when it builds the autograder's image.
# Base image: any of Gradescope's Ubuntu images. The kit needs Python 3.11 or newer: the
# image's python3 where it is new enough (Ubuntu 24.04: 3.12), else deadsnakes' 3.11
# (Ubuntu 22.04 ships 3.10). Everything grading needs is installed here, none of it later.
set -euo pipefail
AUTOGRADER="${ATTNKIT_AUTOGRADER_ROOT:-/autograder}"
SOURCE="$AUTOGRADER/source"
VENV="$AUTOGRADER/venv"
# Only the kit's own test sets this: a site-packages folder that already holds the
# dependencies. apt and every download are then skipped.
OFFLINE_SITE="${ATTNKIT_SETUP_OFFLINE_SITE:-}"

python_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }

if [ -n "$OFFLINE_SITE" ]; then
  PYTHON="${ATTNKIT_SETUP_PYTHON:-python3}"
else
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # bubblewrap: the grading sandbox.
  apt-get install -y -qq bubblewrap python3 python3-venv >/dev/null
  PYTHON=python3
  if ! python_ok python3; then
    apt-get install -y -qq software-properties-common >/dev/null
    add-apt-repository -y ppa:deadsnakes/ppa >/dev/null
    apt-get update -qq
    apt-get install -y -qq python3.11 python3.11-venv >/dev/null
    PYTHON=python3.11
  fi
fi
if ! python_ok "$PYTHON"; then
  echo "setup.sh: $PYTHON is missing or older than Python 3.11, which the kit needs" >&2
  exit 1
fi

if [ -n "$OFFLINE_SITE" ]; then
  # pip and the build backend come from the offline folder too, like everything else.
  "$PYTHON" -m venv --without-pip "$VENV"
  SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$OFFLINE_SITE" > "$SITE/attnkit-offline-dependencies.pth"
  "$VENV/bin/python" -m pip install -q --no-index --no-deps --no-build-isolation "$SOURCE"
else
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  # PyTorch's CPU index: on plain PyPI the same range resolves to the CUDA build (GBs).
  "$VENV/bin/python" -m pip install -q "torch>=2.4,<2.14" \\
      --index-url https://download.pytorch.org/whl/cpu
  "$VENV/bin/python" -m pip install -q "$SOURCE"
fi
# The story the hidden tests read: the zip's verified copy, or a download now.
ATTNKIT_DATA_DIR="$SOURCE/data" "$VENV/bin/attnkit" data

# Where the container refuses bubblewrap user namespaces, run_autograder isolates student
# code as this separate unprivileged user instead. Nothing of the kit's hidden parts may be
# readable to it: the source folder (references, hidden suites) and the installed copies of
# the instructor packages. The lesson text is public: a readable copy for the lessons' cells.
# An account of its own (not a system account: the kit refuses those), owning nothing;
# everything it makes is removed after each student.
if ! id attnkit-student >/dev/null 2>&1; then
  useradd --no-create-home --shell /usr/sbin/nologin attnkit-student 2>/dev/null \\
    || echo "setup.sh: could not create the user attnkit-student" >&2
fi
chmod 700 "$SOURCE"
if [ -e "$SOURCE/course-secret" ]; then chmod 600 "$SOURCE/course-secret"; fi
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for hidden in "$SITE"/attnkit_autograder "$SITE"/attnkit_solutions; do
  if [ -e "$hidden" ]; then chmod -R go-rwx "$hidden"; fi
done
mkdir -p "$AUTOGRADER/lesson-data"
install -m 644 "$SOURCE/data/the-verdict.txt" "$AUTOGRADER/lesson-data/the-verdict.txt"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission.
set -uo pipefail
AUTOGRADER="${{ATTNKIT_AUTOGRADER_ROOT:-/autograder}}"
export ATTNKIT_DATA_DIR="$AUTOGRADER/source/data"
export ATTNKIT_VERDICT="$AUTOGRADER/lesson-data/the-verdict.txt"
exec "$AUTOGRADER/venv/bin/python" -m attnkit_autograder.cli.run_autograder \\
    --root "$AUTOGRADER" --assignment {assignment} --visibility {visibility}{options}
"""
SECRET_NAME = "course-secret"
LATE_POLICY = "late-policy.toml"
"""The late policy's name in the zip (and in ``/autograder/source``), when one is given."""


def build_zip(
    target: Path,
    assignment: str,
    visibility: str,
    kit_root: Path,
    secret: bytes | None = None,
    policy: Path | None = None,
    grade_arguments: tuple[str, ...] = (),
) -> Path:
    """Write the autograder zip for one assignment; its root is Gradescope's source folder.
    With ``secret`` (the course secret), it grades with per-student inputs; with a late
    ``policy`` (checked now), the zip holds it and run_autograder applies it;
    ``grade_arguments`` (the grading options, see :data:`PASSED_ON`) are run_autograder's."""
    from ..classes import late

    if policy is not None:
        late.read_policy(policy)
    if not (kit_root / "solutions").is_dir() or not (kit_root / "autograder").is_dir():
        raise KitError(
            f"{kit_root} does not hold the kit's source (solutions/ and autograder/).",
            "Run `attnkit gradescope` from a clone of the kit's repository "
            "(installed with pip install -e .).",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    options = "".join(f" {shlex.quote(argument)}" for argument in grade_arguments)
    options += "" if secret is None else " --seed-per-student"
    if policy is not None:
        options += f' \\\n    --late-policy "$AUTOGRADER/source/{LATE_POLICY}"'
    run = RUN_AUTOGRADER.format(assignment=assignment, visibility=visibility, options=options)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("setup.sh", SETUP_SH), ("run_autograder", run)):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16
            archive.writestr(info, text)
        if secret is not None:
            info = zipfile.ZipInfo(SECRET_NAME)
            info.external_attr = 0o600 << 16
            archive.writestr(info, secret + b"\n")
        for part in KIT_PARTS:
            path = kit_root / part
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            for file in files:
                relative = file.relative_to(kit_root)
                if SKIPPED_NAMES & set(relative.parts) or file.suffix in (".pyc", ".part"):
                    continue
                archive.write(file, relative.as_posix())
        if policy is not None:
            archive.write(policy, LATE_POLICY)
    return target


class GraderFault(Exception):
    """The kit itself failed on this submission: Gradescope must record no score at all
    (run_autograder exits 1 without results.json, which Gradescope shows as an autograder
    failure that staff can rerun), never a 0 that looks like the student's."""


def to_results(grades: dict[str, Any], visibility: str = "after_published") -> dict[str, Any]:
    """Gradescope's results.json for the one submission in ``grades``; :class:`GraderFault`
    when the grader, not the submission, failed."""
    records = grades.get("submissions", [])
    if len(records) != 1:
        return {
            "score": 0.0,
            "output": f"Expected exactly one notebook in the submission, found {len(records)}. "
            "Submit the assignment's .ipynb file.",
            "tests": [],
        }
    record = records[0]
    if record.get("fault") == "grader":
        raise GraderFault(record["error"])
    tests = []
    for test in record["tests"]:
        output = test["message"]
        if test.get("hint"):
            output += f"\nHint: {test['hint']}"
        tests.append(
            {
                "name": f"{test['exercise']}: {test['grade_id']}",
                "score": test["points"],
                "max_score": test["max_points"],
                "status": "passed" if test["status"] == "passed" else "failed",
                "output": output,
                "visibility": visibility,
            }
        )
    result = {
        "score": record["score"],
        "tests": tests,
        "visibility": visibility,
        "stdout_visibility": "hidden",
    }
    if record["status"] == "error":
        result["output"] = f"Your submission could not be graded: {record['error']}"
    elif record.get("late", {}).get("penalty_percent"):
        result["output"] = (
            f"Tests: {record['raw_score']:g} points. Late: {record['late']['reason']}"
        )
    return result


def apply_late_policy(policy: Any, record: dict[str, Any], metadata: Path) -> dict[str, Any]:
    """``record`` with the policy applied to Gradescope's submission time. Extensions are
    looked up by the submitters' email or Gradescope id (any member of a group); with no
    deadline for the assignment in the policy, Gradescope's own due date counts."""
    from ..classes import late
    from ..classes.hand_in import gradescope_hand_in

    hand_in, due, submitters = gradescope_hand_in(metadata)
    student = record["student"]
    # An email matches whatever its case (Gradescope and the policy may spell it apart).
    wanted = {key.strip().lower() for key in submitters}
    named = next((k for k in policy.extensions if k.lower() in wanted), student)
    decided = late.decide(policy, hand_in, {**record, "student": named}, due)
    return {**decided, "student": student}


def gradescope_student(root: Path) -> str:
    """The student of this submission, as Gradescope names them: the ``id`` of each user in
    ``submission_metadata.json`` (a group's ids, sorted, joined by commas)."""
    path = root / "submission_metadata.json"
    try:
        users = json.loads(path.read_text(encoding="utf-8"))["users"]
        ids = sorted(str(user["id"]) for user in users)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GraderFault(f"{path} names no student ({type(exc).__name__})") from None
    if not ids:
        raise GraderFault(f"{path} names no student")
    return ",".join(ids)


def grade_for_gradescope(
    root: Path,
    slug: str,
    visibility: str,
    per_student: bool = False,
    policy: Any = None,
    graded_with: GradeOptions | None = None,
) -> dict[str, Any]:
    """Grade ``root/submission`` and return Gradescope's results document; with
    ``per_student``, on inputs of the student's own (see :mod:`.per_student`); with a late
    ``policy`` (a :class:`~attnkit_autograder.classes.late.LatePolicy`), applied to the score."""
    from ..classes.discovery import one_students_folder
    from ..grading.per_student import CourseSecret, CourseSecretError, from_file

    started = time.monotonic()
    settings = sandbox_for_gradescope(graded_with or GradeOptions(), root)
    student = "submission"
    if per_student:
        try:
            secret = CourseSecret(from_file(root / "source" / SECRET_NAME))
        except CourseSecretError as exc:
            raise GraderFault(exc.message) from None
        settings, student = replace(settings, course_secret=secret), gradescope_student(root)
    # Which file is graded: the rule every path uses (checkpoints, .py exports, several
    # notebooks), and the grading under the same watchdog as any class's.
    submission = one_students_folder(root / "submission", student, slug, "gradescope")
    record = graded_under_watch(submission, settings)
    if policy is not None:
        record = apply_late_policy(policy, record, root / "submission_metadata.json")
    results = to_results({"submissions": [record]}, visibility)
    results["execution_time"] = round(time.monotonic() - started)
    print(f"sandbox: {record.get('sandbox', 'unknown')}")  # stdout is hidden from students
    return results


def graded_under_watch(submission: Any, settings: Any) -> Any:
    """One submission graded as every class is (:func:`attnkit_autograder.classes.supervisor.
    grade_all`): in a grader process the supervisor stops when it overruns the budget plus
    the grace, with a result that names the cause. GraderFault when there is no result."""
    import tempfile

    from ..classes.results import read_result, result_path
    from ..classes.supervisor import grade_all

    with tempfile.TemporaryDirectory(prefix="attnkit-gradescope-") as folder:
        out = Path(folder)
        outcome = grade_all([submission], out, settings, jobs=1)
        path = result_path(out, submission)
        record = read_result(path)
        if record is None:
            raise GraderFault(outcome.lost.get(path) or "the grader wrote no result")
    return record


GRADESCOPE_USER = "attnkit-student"


def sandbox_for_gradescope(graded_with: GradeOptions, root: Path) -> Any:
    """bubblewrap where the container allows it; else the separate unprivileged user that
    setup.sh created, claimed as ``attnkit grade --sandbox-user`` claims it (the account
    checked, what it can write found, and the kit's source and the results folder proved
    unreadable to it). Never no isolation: if neither works, grading fails loudly."""
    from ..grading.pipeline import GradeSettings
    from ..sandbox.layout import SandboxSettings, SandboxUnavailable
    from ..sandbox.user import claim
    from ..sandbox.zygote import check_sandbox

    try:
        check_sandbox(SandboxSettings())
    except SandboxUnavailable:
        try:
            claim(GRADESCOPE_USER, (root / "source", root / "results"))
        except SandboxUnavailable as refused:
            raise GraderFault(str(refused)) from None
        return GradeSettings(replace(graded_with, sandbox_user=GRADESCOPE_USER))
    return GradeSettings(graded_with)


def verify_scripts_parse(zip_path: Path) -> None:
    """bash -n on both scripts: a syntax error would only show on Gradescope's machine."""
    with zipfile.ZipFile(zip_path) as archive:
        for name in ("setup.sh", "run_autograder"):
            subprocess.run(["bash", "-n"], input=archive.read(name), check=True)
