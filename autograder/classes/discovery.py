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
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from attnkit.assignments import assignment_in_metadata

from ..grading.submission import (
    Refused,
    Submission,
    ascii_lower,
    is_notebook,
    parse_notebook,
    read_submission_file,
    refusal,
    submission_stem,
    text_id,
)
from .hand_in import COPY_MARKERS, Assignment, Identity, identify_file, identify_folder

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


def looks_like_submission(path: Path) -> bool:
    """A name that is (or may be, for a link or an odd entry) one of the kinds we grade,
    whatever its case or an extension added after it (``x.IPYNB``, ``x.ipynb.json``): a
    file named like a submission is graded or refused with a row, never passed over."""
    name = ascii_lower(path.name)
    return name.endswith(SUFFIXES) or ".ipynb" in name


def examine(
    path: Path, folder_parts: tuple[str, ...], assignment: Assignment
) -> tuple[str | None, str | None, str]:
    """(assignment, problem, sha256) of one file; never raises."""
    slug = assignment.of(path, folder_parts)
    try:
        data = read_submission_file(path)
    except Refused as exc:
        return slug, str(exc), ""
    except Exception as exc:  # anything at all about one file is that file's problem
        return slug, f"{path}: {exc!r}"[:500], ""
    digest = hashlib.sha256(data).hexdigest()
    if (problem := assignment.disagreement(path)) is not None:
        return slug, problem, digest
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
        return slug, wrong_lesson(path, named, slug, assignment.by_folder), digest
    return slug, None, digest  # other damage is reported, in detail, when it is graded


def wrong_lesson(path: Path, named: str, slug: str, by_folder: bool = False) -> str:
    if by_folder:
        return (
            f"{path.name} was collected into nbgrader's folder of {slug}, but the notebook "
            f"itself is {named} (its metadata says so): it is not graded as either. Hand in "
            f"the {slug} notebook (nbgrader's folder decides the assignment)"
        )
    return (
        f"{path.name} was handed in as {slug}, but the notebook itself is {named} (its "
        f"metadata says so): hand in the {slug} notebook, or grade this file as {named} "
        f"with --assignment {named}"
    )


def file_candidate(
    path: Path,
    info: os.stat_result | None,
    who: Identity | None,
    folder_parts: tuple[str, ...],
    assignment: Assignment,
) -> Candidate:
    """A candidate for one file entry, refused from its lstat where that suffices. ``who``
    is its folder's identity (None: a file directly in the root, named by its own name)."""
    reason = None if info is None else refusal(path, info.st_mode, info.st_size)
    if reason:
        slug, digest = assignment.of(path, folder_parts), ""
    else:
        slug, reason, digest = examine(path, folder_parts, assignment)
    who = who or identify_file(path.name, slug)
    if slug is None and reason is None:
        reason = (
            "cannot tell which assignment this is: name the file after it "
            "(e.g. 02_self_attention.ipynb) or pass --assignment"
        )
    submission = Submission(
        who.student, slug, path, reason, digest, who.rule, who.notes, who.lms_number
    )
    return Candidate(submission, who.lms_number, who.attempt, folder_parts)


def walk_student(folder: Path, who: Identity, assignment: Assignment) -> Iterator[Candidate]:
    """Every submission file under one student's folder, or one candidate saying there is none."""
    found = False
    for candidate in walk_folder(folder, who, assignment):
        found = True
        yield candidate
    if not found:
        reason = f"{folder} holds no notebook (.ipynb) or .py file"
        yield refused(folder, who, assignment.forced, reason)


def refused(path: Path, who: Identity, slug: str | None, reason: str | None) -> Candidate:
    submission = Submission(who.student, slug, path, reason, "", who.rule, (), who.lms_number)
    return Candidate(submission, who.lms_number)


def walk_folder(folder: Path, who: Identity, assignment: Assignment) -> Iterator[Candidate]:
    """The candidates under one student's folder, breadth-first and bounded in depth. In
    nbgrader's layout the folder below the student's says the assignment."""
    pending: list[tuple[Path, tuple[str, ...], Assignment]] = [(folder, (), assignment)]
    while pending:
        current, parts, within = pending.pop(0)
        for path, info, problem in entries(current):
            if problem or info is None:
                yield replace(refused(path, who, within.forced, problem), folder_parts=parts)
                continue
            if stat.S_ISDIR(info.st_mode):
                if skipped_folder(path):
                    continue
                if (problem := output_refusal(path)) is not None:
                    yield replace(refused(path, who, within.forced, problem), folder_parts=parts)
                    continue
                inner = within.below(path.name, depth=len(parts))
                if inner is None:
                    continue  # another assignment's folder (nbgrader layout, --assignment)
                if len(parts) >= MAX_FOLDER_DEPTH:
                    reason = (
                        f"{path} is nested more than {MAX_FOLDER_DEPTH} folders deep inside "
                        f"{folder.name}/: move the notebook nearer the top"
                    )
                    yield refused(path, who, within.forced, reason)
                    continue
                pending.append((path, (*parts, path.name), inner))
            elif looks_like_submission(path) or (stat.S_ISLNK(info.st_mode) and not path.suffix):
                yield file_candidate(path, info, who, parts, within)


def walk(root: Path, assignment: Assignment) -> Iterator[Candidate]:
    """Every candidate under ``root`` (a folder), each entry examined once."""
    for path, info, problem in entries(root):
        if problem or info is None:
            who = Identity(text_id(submission_stem(path)), "file name")
            yield refused(path, who, assignment.forced, problem)
        elif stat.S_ISDIR(info.st_mode):
            if skipped_folder(path):
                continue
            # nbgrader's folder is nbgrader's student id, whatever an LMS's names look like
            # inside it: a participant named like another's Canvas or Moodle folder stays who
            # nbgrader collected.
            who = (
                Identity(text_id(path.name), "nbgrader")
                if assignment.nbgrader
                else identify_folder(path.name)
            )
            if (problem := output_refusal(path)) is not None:
                yield refused(path, who, assignment.forced, problem)
                continue
            yield from walk_student(path, who, assignment)
        elif looks_like_submission(path) or (stat.S_ISLNK(info.st_mode) and not path.suffix):
            yield file_candidate(path, info, None, (), assignment)


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
    """One submission from a student's candidate files for one assignment: the one rule of
    which file is graded, on every path (discovery, nbgrader's collector, Gradescope).

    Files that cannot be graded are set aside (and named). Of the rest: the latest of
    Blackboard's attempts; else the only one; else the only one named after the
    assignment; else the only notebook (a ``.py`` export beside it is set aside); else the
    latest of the LMS's uploads (Canvas's numbers). Anything else is refused, naming the
    files: never a guess."""
    if len(group) == 1:
        return group[0].submission
    usable = [c for c in group if c.submission.problem is None]
    set_aside = tuple(
        f"set aside {c.submission.path.name}: {c.submission.problem}"
        for c in group
        if c.submission.problem
    )
    attempts = sorted((c for c in usable if c.attempt), key=lambda c: c.attempt)
    timed = all(c.submission.id_rule == "blackboard" for c in attempts)
    if attempts and len(attempts) == len(usable) and timed:
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
    if attempts and len(attempts) == len(usable):
        latest = attempts[-1].submission
        note = f"graded the latest of {len(attempts)} uploads ({latest.path.name})"
        return replace(latest, notes=(*latest.notes, note, *set_aside))
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
        candidate = file_candidate(root, os.lstat(root), None, (), Assignment(forced_assignment))
        return [replace(candidate.submission, root=os.path.abspath(root.parent))]
    given = os.path.abspath(root)
    if (root / "submitted").is_dir():
        root = root / "submitted"
    assignment = Assignment(forced_assignment, nbgrader=root.name == "submitted")
    candidates = separate_namesakes(list(walk(root, assignment)))
    if len(candidates) > 1:  # with one file (Gradescope's upload) the id does not matter
        candidates = [renamed_copy(c) for c in candidates]
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(group_key(candidate), []).append(candidate)
    found = [replace(pick(group), root=given) for group in groups.values()]
    return sorted(found, key=lambda s: (s.student, s.assignment or "", str(s.path)))


def one_students_folder(folder: Path, student: str, slug: str, rule: str) -> Submission:
    """The submission in one student's folder (Gradescope's ``submission/``), chosen by the
    same rule as any class (:func:`pick`), the student named by the platform (``rule``)."""
    candidates = list(walk_student(folder, Identity(student, rule), Assignment(slug)))
    return replace(pick(candidates), root=os.path.abspath(folder))
