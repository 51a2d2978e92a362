"""An nbgrader course for the kit: ``attnkit course init``, and the two plugins that
``nbgrader zip_collect`` runs on an LMS's download.

The collection is a platform adapter, like the kit's own discovery, and reads who and when
the same way (:mod:`attnkit_autograder.classes.hand_in`), from the layer the LMS wrote:

* :class:`LayerExtractor` unpacks each archive of ``downloaded/<assignment>/archive/`` (the
  LMS's download) so that the LMS's names stay the top of ``extracted/``: a file the LMS
  named is copied as it is, and an archive a student uploaded (whose inner names, headers
  and times are the student's) is unpacked safely into a folder under its LMS name, or
  refused for that student alone, with the reason;
* :class:`AssignmentCollector` grades nothing itself: it asks the kit's discovery which
  student each top entry is and which of a student's files is the submission (the one rule
  every path uses), collects that file, and skips the others with a warning naming them.
  Two students with one display name stay two students (the LMS's numbers tell them
  apart); one student's bad upload, or a name that says no one, costs only that student.

What the LMS's layer said of each collected student (a late mark, an attempt time, its
number) and the uploads it refused are written to nbgrader's ``submitted/`` folder
(:data:`~attnkit_autograder.classes.hand_in.COLLECTED`), where ``attnkit grade`` reads
them: a time is never taken from a file a student made.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from attnkit.assignments import ASSIGNMENTS
from attnkit.errors import KitError
from attnkit.terminal import printable

from ..authoring.released import generate_assignments, write_course_skeleton
from ..classes import hand_in
from ..classes.discovery import discover
from ..classes.spreadsheet import unsafe_unquoted_cell
from ..classes.uploads import Budget, Refused, archive_stem, is_archive, safe_part, unpack
from ..grading.submission import Submission

MAX_DOWNLOAD_BYTES = 16 * 1024**3
MAX_DOWNLOAD_MEMBERS = 100_000
MAX_DOWNLOAD_SECONDS = 3600.0
"""The LMS's own download is the platform's file: its budget is the whole class's."""
"""An LMS's download of a whole class may be large; each student's upload in it has the
limits of one upload (:mod:`attnkit_autograder.classes.uploads`)."""
REFUSED = "attnkit-refused.json"
"""The extractor's list of refused uploads, beside the extracted files: (LMS name, why)."""


def _plugin_base(name: str) -> type:
    from nbgrader.plugins import zipcollect

    return getattr(zipcollect, name)


class LayerExtractor(_plugin_base("ExtractorPlugin")):
    """Unpack the LMS's download, keeping the LMS's names at the top of ``extracted/``."""

    def extract(self, archive_path: str, extracted_path: str) -> None:
        refused: dict[str, str] = {}
        target = Path(extracted_path)
        for root, _, names in os.walk(archive_path):
            for name in sorted(names):
                download = Path(root) / name
                if is_archive(name):
                    refused |= self.unpack_download(download, target)
                else:
                    place(download, target / safe_part(name), refused)
        for entry, why in sorted(refused.items()):
            self.log.warning("%s: not collected: %s", printable(entry), printable(why))
        hand_in.write_record(target / REFUSED, refused)

    def unpack_download(self, download: Path, target: Path) -> dict[str, str]:
        """The LMS's archive: its entries at the top, each student's upload unpacked."""
        staging = target.parent / f".{target.name}-{download.name}"
        shutil.rmtree(staging, ignore_errors=True)
        budget = Budget(MAX_DOWNLOAD_BYTES, MAX_DOWNLOAD_MEMBERS, MAX_DOWNLOAD_SECONDS)
        refused: dict[str, str] = {}  # one student's entry named unsafely costs that student
        problem = unpack(download, staging, budget, nested=False, refused=refused)
        if problem is not None:
            return {download.name: problem}
        try:
            for entry in sorted(staging.iterdir()):
                place(entry, target / entry.name, refused)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return refused


def place(entry: Path, target: Path, refused: dict[str, str]) -> None:
    """One entry the LMS named, at ``target``: a student's archive unpacked into a folder of
    its LMS name; a folder (Moodle's, one a student) copied with the archives in it
    unpacked; a file copied as it is. An upload that cannot be unpacked, or whose archive's
    own name cannot be a folder's, is refused alone."""
    try:
        place_entry(entry, target, refused)
    except Refused as exc:
        shutil.rmtree(target, ignore_errors=True)
        refused[entry.name] = f"{entry.name}: {exc}"


def place_entry(entry: Path, target: Path, refused: dict[str, str]) -> None:
    if entry.is_symlink():
        return
    if entry.is_file() and is_archive(entry.name):
        problem = unpack(entry, target.with_name(safe_part(archive_stem(target.name))))
        if problem is not None:
            refused[entry.name] = problem
        return
    if entry.is_file():
        shutil.copyfile(entry, target)
        return
    if entry.is_dir():
        shutil.copytree(entry, target, symlinks=True, dirs_exist_ok=True)
        budget = Budget()
        for path in sorted(p for p in target.rglob("*") if p.is_file() and is_archive(p.name)):
            problem = unpack(path, path.with_name(safe_part(archive_stem(path.name))), budget)
            path.unlink()
            if problem is not None:
                shutil.rmtree(target, ignore_errors=True)
                refused[entry.name] = problem
                return


class AssignmentCollector(_plugin_base("FileNameCollectorPlugin")):
    """Collect, per student, the one file the kit's discovery says is their submission."""

    _plan: dict[str, Submission] | None = None

    def plan(self) -> dict[str, Submission]:
        """The kit's discovery of ``extracted/``, once: the chosen file of each student."""
        if self._plan is None:
            app, slug = self.parent, self.parent.coursedir.assignment_id
            extracted = Path(app._format_collect_path(app.extracted_directory))
            found = [s for s in discover(extracted, slug) if s.assignment in (slug, None)]
            self._plan = {str(s.path): s for s in found if s.problem is None}
            for submission in found:
                if submission.problem is not None:
                    self.log.warning(
                        "%s: not collected: %s", submission.student, printable(submission.problem)
                    )
            self.record(app, slug, extracted, found)
        return self._plan

    def record(self, app: Any, slug: str, extracted: Path, found: list[Submission]) -> None:
        """What the LMS's layer said of each collected student, and what was refused."""
        refused = hand_in.read_record(extracted / REFUSED)
        refused |= {
            str(s.path.relative_to(extracted).parts[0]): s.problem
            for s in found
            if s.problem is not None and s.path != extracted
        }
        submitted = Path(app.coursedir.format_path(app.coursedir.submitted_directory, ".", "."))
        collected = [s for s in found if s.problem is None]
        hand_in.record_collection(submitted, slug, extracted, collected, refused)

    def collect(self, submitted_file: str) -> dict[str, str] | None:
        path = Path(submitted_file)
        if path.name == REFUSED:
            return None
        submission = self.plan().get(str(path))
        if submission is None:
            return None
        student = submission.student
        unsafe = unsafe_unquoted_cell(student) or (
            "it is not a folder name" if student in (".", "..") or "/" in student else None
        )
        if unsafe:
            self.log.warning(
                "%s: not collected: the student id %r cannot reach nbgrader's gradebook and "
                "exports (%s); rename the file after the student",
                printable(path.name),
                printable(student),
                unsafe,
            )
            return None
        slug = self.parent.coursedir.assignment_id
        return {"student_id": student, "file_id": f"{slug}.ipynb"}


def init_course(root: Path) -> list[str]:
    """A working nbgrader course for the kit: config, source notebooks, gradebook, releases."""
    if (root / "nbgrader_config.py").exists():
        raise KitError(
            f"{root} already holds an nbgrader course (nbgrader_config.py).",
            "Choose an empty folder.",
        )
    slugs = list(ASSIGNMENTS)
    write_course_skeleton(root, slugs)
    generate_assignments(root, slugs)
    return slugs
