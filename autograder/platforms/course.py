"""An nbgrader course for the kit: ``attnkit course init``, and the collector that
``nbgrader zip_collect`` runs on LMS downloads.
"""

from __future__ import annotations

import datetime
from pathlib import Path

from attnkit.assignments import ASSIGNMENTS
from attnkit.errors import KitError
from attnkit.terminal import printable

from ..authoring.released import generate_assignments, write_course_skeleton
from ..classes.discovery import COPY_MARKERS, identify_file, identify_folder


def _collector_base() -> type:
    from nbgrader.plugins.zipcollect import FileNameCollectorPlugin

    return FileNameCollectorPlugin


def collected_identity(path: Path, slug: str) -> tuple[str, str | None] | None:
    """(student id, attempt time or None) for an LMS download of assignment ``slug``, read
    from the part of the name the platform writes (see :mod:`attnkit_autograder.classes.discovery`);
    None when the name says no one (just the assignment, a renamed copy, control bytes)."""
    folder_student, folder_rule, _ = identify_folder(path.parent.name)
    if folder_rule == "moodle":
        student, when = folder_student, None
    else:
        student, rule, _, attempt, _ = identify_file(path.name, slug)
        if rule == "file name" and (student in (path.stem, slug) or COPY_MARKERS.search(student)):
            return None
        when = attempt or None
    if not student or student in (".", "..") or not student.isprintable():
        return None
    if when:  # Blackboard's 2024-03-02-09-30-00
        day, clock = when[:10], when[11:].replace("-", ":")
        when = f"{day} {clock}"
    return student, when


class AssignmentCollector(_collector_base()):
    """nbgrader's collector, storing every file under the assignment's notebook name, for the
    student the platform's part of its name says (:func:`collected_identity`).

    Every file gets a timestamp (the attempt time, else the file's own), so two uploads of
    one student keep the newer instead of stopping the collection of everyone else's.
    """

    def collect(self, submitted_file: str) -> dict[str, str] | None:
        path = Path(submitted_file)
        if path.suffix not in self.valid_ext:
            return None
        slug = self.parent.coursedir.assignment_id
        identity = collected_identity(path, slug)
        if identity is None:
            self.log.warning(
                "%s: cannot tell which student this is, so it was not collected. Rename it "
                "<student>_%s%s and collect again",
                printable(path.name),
                slug,
                path.suffix,
            )
            return None
        student, when = identity
        if when is None:
            stamp = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC)
            when = stamp.strftime("%Y-%m-%d %H:%M:%S.%f")
        return {"student_id": student, "file_id": f"{slug}.ipynb", "timestamp": when}


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
