"""Find the submissions under a path, in any of the layouts instructors use.

* nbgrader:       ``submitted/<student>/<assignment>/<notebook>.ipynb`` (the folder given
                  may be ``submitted/`` or the course folder that holds it);
* one folder per student: ``<root>/<student>/**/*.ipynb`` (or ``.py``), up to
  :data:`MAX_FOLDER_DEPTH` folders deep; Moodle's ``Full Name_12345_assignsubmission_file_``
  folders count as the student ``Full Name``;
* single files:   ``<root>/<student>_<assignment>.ipynb``, ``<root>/<student>.ipynb``, an LMS
  download name (Canvas, Blackboard: see :func:`identify_file`), or one file given directly.

Discovery never fails for the class: whatever one file or folder holds, it yields a
:class:`Submission`, with a ``problem`` when it cannot be graded. Nothing is followed or
opened that is not a regular file: symbolic links, devices, FIFOs and sockets are refused
from ``lstat`` alone, and files are opened with ``O_NOFOLLOW``. Reading a file is bounded
(:data:`MAX_SUBMISSION_BYTES`) and linear in its size, nesting depth included.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from attnkit.assignments import ASSIGNMENTS, assignment_in_metadata

from ..grading.submission import (
    Refused,
    Submission,
    parse_notebook,
    read_submission_file,
    refusal,
    text_id,
)

SUFFIXES = (".ipynb", ".py")
ALWAYS_SKIPPED = {"__pycache__", ".ipynb_checkpoints", ".git"}
"""Folders that never hold a submission: caches, Jupyter's autosaves, version control."""
OUT_MARKER = ".attnkit-grade.lock"
"""The file ``attnkit grade`` keeps in every OUT: a folder holding it is a run's output
(an OUT inside SUBMISSIONS), never graded as a student's folder."""


def marked_as_output(path: Path) -> bool:
    try:
        os.lstat(path / OUT_MARKER)
    except OSError:
        return False
    return True


def skipped_folder(path: Path) -> bool:
    """Folders passed over without a row: caches, Jupyter's autosaves, and folders that
    hold no notebook or script at all (a grading run's OUT, a hidden folder, an OUT's
    feedback/). A folder a student could have made (a dot, the OUT marker) that holds a
    notebook is never passed over: it is graded, or refused with a row (see
    :func:`output_refusal`)."""
    if path.name in ALWAYS_SKIPPED:
        return True
    looks_skipped = path.name.startswith(".") or path.name == "feedback"
    if not (looks_skipped or marked_as_output(path)):
        return False
    return not holds_submissions(path)


def output_refusal(path: Path) -> str | None:
    """Why a folder holding the OUT marker and notebooks is not graded as a student's: its
    notebooks may be a run's copies, and it may be a student's upload; a row says which
    file to remove if it is the latter."""
    if not marked_as_output(path):
        return None
    return (
        f"{path} holds {OUT_MARKER}, the mark of an attnkit grade output folder, and "
        f"notebooks: it was not graded. If it is a student's folder, delete {OUT_MARKER} "
        "from it and grade again"
    )


def holds_submissions(folder: Path) -> bool:
    """Whether ``folder`` holds a notebook or script, MAX_FOLDER_DEPTH deep at most (links
    are not followed, Jupyter's autosaves are not looked at). A grading run's OUT never does:
    it holds JSON, CSV, HTML and text."""
    top = len(folder.parts)
    for root, folders, files in os.walk(folder):
        depth = len(Path(root).parts) - top
        folders[:] = (
            [] if depth >= MAX_FOLDER_DEPTH else [f for f in folders if f not in ALWAYS_SKIPPED]
        )
        if any(looks_like_submission(Path(name)) for name in files):
            return True
    return False


MAX_FOLDER_DEPTH = 4
"""Folders below a student's folder that are searched (``student/a/b/c/d/nb.ipynb``)."""

CANVAS = re.compile(
    r"^(?P<name>[^_]+?)(?P<late>_late)?_(?P<user>\d+)_(?P<sub>\d+)_(?P<file>.+)$",
    re.IGNORECASE | re.DOTALL,  # the student's own file name may hold any character
)
MOODLE = re.compile(r"^(?P<name>.+?)_(?P<number>\d+)_assignsubmission_[a-z]+_?$")
BLACKBOARD = re.compile(
    r"^(?P<title>.+?)_(?P<user>[^_]+)_attempt_(?P<when>\d{4}(?:-\d{2}){5})(?:_(?P<file>.*))?$",
    re.DOTALL,
)
"""Blackboard writes ``<title>_<user>_attempt_<time>`` and then the student's own file name.
The title is matched lazily, so the platform's prefix, the first ``_<user>_attempt_<time>``,
names the student: a file the student called ``x_jdoe_attempt_2099-...`` names no one."""
CANVAS_LATE_NOTE = "Canvas marked this submission LATE"
"""The note on a file whose Canvas prefix holds ``_LATE_``: the late policy reads it."""
COPY_MARKERS = re.compile(r"copy of|\bcopy\b|[-_ ]copy$|\(\d+\)|colab", re.I)


@dataclass(frozen=True)
class Candidate:
    """A file (or a refused entry) before submissions are grouped per student and assignment."""

    submission: Submission
    lms_number: str = ""
    """The LMS's own number for the student: tells apart two students with the same name."""
    attempt: str = ""
    """Sortable attempt time (Blackboard): the latest attempt is graded."""
    folder_parts: tuple[str, ...] = field(default=())


# -- who and which assignment --------------------------------------------------------------------


def slug_in(names: tuple[str, ...]) -> str | None:
    for name in reversed(names):
        for slug in ASSIGNMENTS:
            if slug in name:
                return slug
    return None


def identify_file(name: str, slug: str | None) -> tuple[str, str, str, str, tuple[str, ...]]:
    """(student, id rule, LMS number, attempt, notes) for a file directly in the root folder.

    Canvas names files ``name_12345_67890_original.ipynb`` (``name_LATE_...`` when late);
    Blackboard ``Title_username_attempt_2024-03-01-10-00-00_original.ipynb``. Any other name
    is ``<student>_<assignment>.ipynb`` or ``<student>.ipynb``: the id is what remains once
    the assignment is taken out.
    """
    stem = text_id(submission_stem(Path(name)))
    canvas = CANVAS.match(stem)
    if canvas:
        notes = (CANVAS_LATE_NOTE,) if canvas["late"] else ()
        return canvas["name"], "canvas", canvas["user"], "", notes
    blackboard = BLACKBOARD.match(stem)
    if blackboard:
        return blackboard["user"], "blackboard", "", blackboard["when"], ()
    student = stem.replace(slug, "") if slug else stem
    student = re.sub(r"^[\s_.-]+|[\s_.-]+$", "", student)
    return student or stem, "file name", "", "", ()


def identify_folder(name: str) -> tuple[str, str, str]:
    """(student, id rule, LMS number) for a folder directly in the root folder."""
    name = text_id(name)
    moodle = MOODLE.match(name)
    if moodle:
        return moodle["name"], "moodle", moodle["number"]
    return name, "student folder", ""


def renamed_copy(candidate: Candidate) -> Candidate:
    """The candidate, refused if its id came from a file name that reads like a renamed copy
    (``s04-np-colab-copy_Copy of 02_self_attention.ipynb``) rather than a student's name."""
    submission = candidate.submission
    if submission.problem or submission.id_rule != "file name":
        return candidate
    if not COPY_MARKERS.search(submission.student):
        return candidate
    path = submission.path
    reason = (
        f"{path.name} does not look like <student>_<assignment>{path.suffix}: the student id "
        f"would be {submission.student!r}, which reads like a renamed copy. Rename the file "
        "after the student (or put it in a folder named after the student) and grade again"
    )
    return replace(candidate, submission=replace(submission, problem=reason))


# -- walking the folder ---------------------------------------------------------------------------


def entries(folder: Path) -> Iterator[tuple[Path, os.stat_result | None, str | None]]:
    """(path, lstat, None) for each entry of ``folder``, sorted; (folder, None, reason) if the
    folder cannot be listed."""
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        yield folder, None, f"{folder} cannot be listed ({exc.strerror or exc})"
        return
    for name in names:
        path = folder / name
        try:
            yield path, os.lstat(path), None
        except OSError as exc:
            yield path, None, f"{path} cannot be examined ({exc.strerror or exc})"


ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ascii_lower(name: str) -> str:
    """``name`` with only its ASCII letters lowered: extensions are ASCII, and every other
    character keeps its place (``"İ".lower()`` is two characters, which would shift the
    index of whatever follows it)."""
    return name.translate(ASCII_LOWER)


def is_notebook(path: Path) -> bool:
    """A notebook by its name, whatever its case or an extension added after it."""
    return ".ipynb" in ascii_lower(path.name)


def submission_stem(path: Path) -> str:
    """The name without its submission extension: ``ann_02.IPYNB`` and ``ann_02.ipynb.json``
    are both ``ann_02``."""
    lowered = ascii_lower(path.name)
    for suffix in (".ipynb", ".py"):
        at = lowered.rfind(suffix)
        if at > 0 and (suffix == ".ipynb" or lowered.endswith(suffix)):
            return path.name[:at]
    return path.stem


def looks_like_submission(path: Path) -> bool:
    """A name that is (or may be, for a link or an odd entry) one of the kinds we grade,
    whatever its case or an extension added after it (``x.IPYNB``, ``x.ipynb.json``): a
    file named like a submission is graded or refused with a row, never passed over."""
    name = ascii_lower(path.name)
    return name.endswith(SUFFIXES) or ".ipynb" in name


def examine(
    path: Path, folder_parts: tuple[str, ...], forced: str | None
) -> tuple[str | None, str | None, str]:
    """(assignment, problem, sha256) of one file; never raises."""
    try:
        data = read_submission_file(path)
    except Refused as exc:
        return forced or slug_in((*folder_parts, path.name)), str(exc), ""
    except Exception as exc:  # anything at all about one file is that file's problem
        return forced or slug_in((*folder_parts, path.name)), f"{path}: {exc!r}"[:500], ""
    digest = hashlib.sha256(data).hexdigest()
    slug = forced or slug_in((*folder_parts, path.name))
    if not is_notebook(path):
        return slug, None, digest
    try:
        notebook, damage = parse_notebook(data, path)
    except Refused as exc:
        return slug, str(exc), digest
    named = assignment_in_metadata(notebook)
    if slug is None:
        return named, damage, digest
    if named is not None and named != slug:
        # A lesson-1 notebook handed in as lesson 2 would fail every test of lesson 2 with
        # messages about keywords; say what happened instead of giving a silent 0.
        return slug, wrong_lesson(path, named, slug), digest
    return slug, None, digest  # other damage is reported, in detail, when it is graded


def wrong_lesson(path: Path, named: str, slug: str) -> str:
    return (
        f"{path.name} was handed in as {slug}, but the notebook itself is {named} (its "
        f"metadata says so): hand in the {slug} notebook, or grade this file as {named} "
        f"with --assignment {named}"
    )


def file_candidate(
    path: Path,
    info: os.stat_result | None,
    student: str,
    rule: str,
    folder_parts: tuple[str, ...],
    forced: str | None,
    at_root: bool,
) -> Candidate:
    """A candidate for one file entry, refused from its lstat where that suffices."""
    reason = None if info is None else refusal(path, info.st_mode, info.st_size)
    if reason:
        slug, digest = forced or slug_in((*folder_parts, path.name)), ""
    else:
        slug, reason, digest = examine(path, folder_parts, forced)
    lms_number, attempt, notes = "", "", ()
    if at_root:
        student, rule, lms_number, attempt, notes = identify_file(path.name, slug)
    if slug is None and reason is None:
        reason = (
            "cannot tell which assignment this is: name the file after it "
            "(e.g. 02_self_attention.ipynb) or pass --assignment"
        )
    submission = Submission(student, slug, path, reason, digest, rule, notes)
    return Candidate(submission, lms_number, attempt, folder_parts)


def walk_student(
    folder: Path, student: str, rule: str, number: str, forced: str | None
) -> Iterator[Candidate]:
    """Every submission file under one student's folder, or one candidate saying there is none."""
    found = False
    for candidate in walk_folder(folder, student, rule, number, forced):
        found = True
        yield candidate
    if not found:
        reason = f"{folder} holds no notebook (.ipynb) or .py file"
        yield Candidate(Submission(student, forced, folder, reason, "", rule), number)


def walk_folder(
    folder: Path, student: str, rule: str, number: str, forced: str | None
) -> Iterator[Candidate]:
    """The candidates under one student's folder, breadth-first and bounded in depth."""
    pending: list[tuple[Path, tuple[str, ...]]] = [(folder, ())]
    while pending:
        current, parts = pending.pop(0)
        for path, info, problem in entries(current):
            if problem or info is None:
                bad = Submission(student, forced, path, problem, "", rule)
                yield Candidate(bad, number, "", parts)
                continue
            if stat.S_ISDIR(info.st_mode):
                if skipped_folder(path):
                    continue
                if (problem := output_refusal(path)) is not None:
                    yield Candidate(
                        Submission(student, forced, path, problem, "", rule), number, "", parts
                    )
                    continue
                if forced and slug_in((path.name,)) not in (None, forced):
                    continue  # another assignment's folder (nbgrader layout)
                if len(parts) >= MAX_FOLDER_DEPTH:
                    reason = (
                        f"{path} is nested more than {MAX_FOLDER_DEPTH} folders deep inside "
                        f"{folder.name}/: move the notebook nearer the top"
                    )
                    yield Candidate(Submission(student, forced, path, reason, "", rule), number)
                    continue
                pending.append((path, (*parts, path.name)))
            elif looks_like_submission(path) or (stat.S_ISLNK(info.st_mode) and not path.suffix):
                candidate = file_candidate(path, info, student, rule, parts, forced, False)
                yield replace(candidate, lms_number=number)


def walk(root: Path, forced: str | None) -> Iterator[Candidate]:
    """Every candidate under ``root`` (a folder), each entry examined once."""
    for path, info, problem in entries(root):
        if problem or info is None:
            student = text_id(submission_stem(path))
            yield Candidate(Submission(student, forced, path, problem, "", "file name"))
        elif stat.S_ISDIR(info.st_mode):
            if skipped_folder(path):
                continue
            student, rule, number = identify_folder(path.name)
            if (problem := output_refusal(path)) is not None:
                yield Candidate(Submission(student, forced, path, problem, "", rule))
                continue
            yield from walk_student(path, student, rule, number, forced)
        elif looks_like_submission(path) or (stat.S_ISLNK(info.st_mode) and not path.suffix):
            yield file_candidate(path, info, text_id(submission_stem(path)), "", (), forced, True)


# -- one submission per student and assignment ---------------------------------------------------


def group_key(candidate: Candidate) -> tuple[str, str]:
    """Files share a submission when they are the same student's work on the same
    assignment; a file of unknown assignment always stands alone."""
    s = candidate.submission
    return s.student, s.assignment or f"?{s.path}"


def separate_namesakes(candidates: list[Candidate]) -> list[Candidate]:
    """Students who share an id but not the LMS's number for them get ``id_number`` ids.

    Repeated until every id stands for one number: a student whose own chosen name reads
    like another's disambiguated id (``Ada Lovelace_4242`` with number 7777) is separated
    again, never merged with the student the platform numbered 4242. Each round lengthens
    the ids it changes, so it ends; ids come from the platform's numbers, not from names."""
    for _ in range(len(candidates) + 1):
        numbers: dict[str, set[str]] = {}
        for c in candidates:
            numbers.setdefault(c.submission.student, set()).add(c.lms_number)
        shared = {student for student, found in numbers.items() if len(found) > 1}
        if not shared:
            break
        candidates = [
            replace(c, submission=replace(c.submission, student=f"{c.submission.student}_{n}"))
            if c.submission.student in shared and (n := c.lms_number)
            else c
            for c in candidates
        ]
    return candidates


def pick(group: list[Candidate]) -> Submission:
    """One submission from a student's candidate files for one assignment."""
    if len(group) == 1:
        return group[0].submission
    usable = [c for c in group if c.submission.problem is None]
    set_aside = tuple(
        f"set aside {c.submission.path.name}: {c.submission.problem}"
        for c in group
        if c.submission.problem
    )
    attempts = sorted((c for c in usable if c.attempt), key=lambda c: c.attempt)
    if attempts and len(attempts) == len(usable):
        latest = attempts[-1].submission
        note = f"graded the latest of {len(attempts)} attempts ({attempts[-1].attempt})"
        return replace(latest, notes=(*latest.notes, note, *set_aside))
    slug = group[0].submission.assignment
    named = [c for c in usable if submission_stem(c.submission.path) == slug]
    notebooks = [c for c in usable if is_notebook(c.submission.path)]
    for choice in (usable, named, notebooks):
        if len(choice) == 1:
            chosen = choice[0].submission
            return replace(chosen, notes=(*chosen.notes, *set_aside))
    first = group[0].submission
    if not usable:
        return replace(first, notes=set_aside[1:])
    listed = ", ".join(sorted(c.submission.path.name for c in usable))
    common = Path(os.path.commonpath([c.submission.path for c in usable]))
    return replace(
        first,
        path=common,
        sha256="",
        problem=f"several candidate files ({listed}); keep one",
    )


def discover(root: Path, forced_assignment: str | None = None) -> list[Submission]:
    """Every submission under ``root``, sorted by student and assignment; never raises for
    what the files hold (an unreadable ``root`` itself is the only error)."""
    if root.is_file():
        candidate = file_candidate(root, os.lstat(root), "", "", (), forced_assignment, True)
        return [candidate.submission]
    if (root / "submitted").is_dir():
        root = root / "submitted"
    candidates = separate_namesakes(list(walk(root, forced_assignment)))
    if len(candidates) > 1:  # with one file (Gradescope's upload) the id does not matter
        candidates = [renamed_copy(c) for c in candidates]
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(group_key(candidate), []).append(candidate)
    found = [pick(group) for group in groups.values()]
    return sorted(found, key=lambda s: (s.student, s.assignment or "", str(s.path)))
