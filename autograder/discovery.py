"""Find the submissions under a path, in any of the layouts instructors use.

* nbgrader:       ``submitted/<student>/<assignment>/<notebook>.ipynb`` (the folder given
                  may be ``submitted/`` or the course folder that holds it);
* one folder per student: ``<root>/<student>/*.ipynb`` (or ``.py``);
* single files:   ``<root>/<student>.ipynb``, ``<root>/<student>_<assignment>.ipynb``, or
                  one file given directly.

The assignment of a file comes from ``--assignment``, from the nbgrader folder name,
from an assignment name in the file name (``02_self_attention``), or from the
notebook's own metadata. A file whose assignment cannot be told is still listed, with
the reason, so that it is reported as ungradable rather than silently skipped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from attnkit.assignments import ASSIGNMENTS

SUFFIXES = (".ipynb", ".py")
IGNORED_DIRS = {".ipynb_checkpoints", "__pycache__", ".git", "feedback"}


@dataclass(frozen=True)
class Submission:
    student: str
    assignment: str | None
    path: Path
    problem: str | None = None

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment or 'unknown'}"


def assignment_of(path: Path, forced: str | None) -> str | None:
    if forced:
        return forced
    for slug in ASSIGNMENTS:
        if slug in path.name:
            return slug
    if path.suffix == ".ipynb":
        try:
            head = json.loads(path.read_text(encoding="utf-8"))
            slug = head.get("metadata", {}).get("attnkit", {}).get("assignment")
            if slug in ASSIGNMENTS:
                return slug
        except (OSError, ValueError, AttributeError):
            pass  # unreadable files are reported when they are graded
    return None


def student_from_filename(path: Path, assignment: str | None) -> str:
    name = path.stem
    if assignment:
        name = name.replace(assignment, "")
    name = re.sub(r"^[\s_.-]+|[\s_.-]+$", "", name)
    return name or path.stem


def files_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES)


def subdirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name not in IGNORED_DIRS)


def discover(root: Path, forced_assignment: str | None = None) -> list[Submission]:
    if root.is_file():
        slug = assignment_of(root, forced_assignment)
        return [make(student_from_filename(root, slug), slug, root)]
    if (root / "submitted").is_dir():
        root = root / "submitted"
    found: list[Submission] = []
    for path in files_in(root):
        slug = assignment_of(path, forced_assignment)
        found.append(make(student_from_filename(path, slug), slug, path))
    for student_dir in subdirs(root):
        assignment_dirs = [d for d in subdirs(student_dir) if d.name in ASSIGNMENTS]
        if assignment_dirs:  # nbgrader layout
            for folder in assignment_dirs:
                if forced_assignment and folder.name != forced_assignment:
                    continue
                found.append(pick(student_dir.name, folder.name, files_in(folder), folder))
            continue
        by_assignment: dict[str | None, list[Path]] = {}
        for path in files_in(student_dir):
            by_assignment.setdefault(assignment_of(path, forced_assignment), []).append(path)
        for slug, paths in by_assignment.items():
            found.append(pick(student_dir.name, slug, paths, student_dir))
    return found


def make(student: str, slug: str | None, path: Path) -> Submission:
    problem = (
        None
        if slug
        else (
            "cannot tell which assignment this is: name the file after it "
            "(e.g. 02_self_attention.ipynb) or pass --assignment"
        )
    )
    return Submission(student, slug, path, problem)


def pick(student: str, slug: str | None, paths: list[Path], folder: Path) -> Submission:
    """One submission per student and assignment; several candidates must be resolved."""
    if not paths:
        return Submission(student, slug, folder, "no notebook (.ipynb) or .py file was submitted")
    if slug is None:
        return make(student, None, paths[0])
    named = [p for p in paths if p.stem == slug] or [p for p in paths if p.suffix == ".ipynb"]
    if len(named) == 1 or len(paths) == 1:
        return Submission(student, slug, (named or paths)[0])
    listed = ", ".join(p.name for p in paths)
    return Submission(student, slug, folder, f"several candidate files ({listed}); keep one")
