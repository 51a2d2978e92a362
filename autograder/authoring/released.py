"""The released notebooks, made by nbgrader from the source notebooks.

``generate_released`` builds a throwaway nbgrader course whose ``source/`` holds the kit's
source notebooks (each beginning with the install cell), runs the real ``nbgrader
generate_assignment`` on it, and returns the released notebooks. ``assignments/`` in the
repository is exactly that output, and ``attnkit generate --check`` regenerates it to prove
it has not drifted.

Whatever a clone's working tree holds, what the kit builds from is the lesson as released:
:func:`released_path` gives the working tree's file while nbgrader's checksums say it is
still as released (see ``attnkit.workspace``), and otherwise the file as the checkout's last
commit holds it. Someone who filled in ``assignments/`` by hand does not break the demo, the
benchmark or the kit's tests; ``attnkit release`` refuses such a file instead.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from attnkit.assignments import ASSIGNMENTS
from attnkit.errors import KitError
from attnkit.setup_cell import install_cell
from attnkit.workspace import file_problems, released_problems

from ..lessons.rubric import source_notebook

NBGRADER_CONFIG = """\
# nbgrader configuration for an attention-kit course (made by `attnkit course init`).
c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = "attention-kit"
c.CourseDirectory.db_url = "sqlite:///{root}/gradebook.db"

# A cell that runs longer than this is stopped and its test counted as failed, instead of
# holding up every student after it. The kit's cells take well under a second.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True

# zip_collect: an LMS download put in downloaded/<assignment>/archive/ lands in
# submitted/<student>/<assignment>/<assignment>.ipynb. Who a file belongs to, and which of a
# student's files is the submission, are read the way `attnkit grade` reads them, from the
# names the LMS wrote (Canvas, Moodle and Blackboard, or <student>_<assignment>), never from
# the names, headers or times inside a student's upload; an upload that cannot be unpacked
# safely, or a name that says no one, is reported and skipped for that student alone.
c.ZipCollectApp.extractor_plugin = "attnkit_autograder.platforms.course.LayerExtractor"
c.ZipCollectApp.collector_plugin = "attnkit_autograder.platforms.course.AssignmentCollector"
"""


def generate_assignments(root: Path, slugs: list[str]) -> None:
    """nbgrader's generate_assignment (creating each in the gradebook) for ``slugs``: in one
    nbgrader process when source/ holds just these (its start-up costs seconds a call)."""
    present = {p.name for p in (root / "source").iterdir() if p.is_dir()}
    if present == set(slugs):
        run_nbgrader(root, "generate_assignment", "*", "--create", "--force")
        return
    for slug in slugs:
        run_nbgrader(root, "generate_assignment", slug, "--create", "--force")


def write_course_skeleton(root: Path, slugs: list[str]) -> None:
    """An nbgrader course at ``root`` whose source/ holds the kit's source notebooks, each
    beginning with the install cell (see :func:`with_install_cell`)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(NBGRADER_CONFIG.format(root=str(root)))
    for slug in slugs:
        target = root / "source" / slug
        target.mkdir(parents=True, exist_ok=True)
        notebook = json.loads(source_notebook(slug).read_text(encoding="utf-8"))
        (target / f"{slug}.ipynb").write_text(
            json.dumps(with_install_cell(notebook, slug), indent=1, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )


def with_install_cell(notebook: dict, slug: str) -> dict:
    """``notebook`` beginning with the locked install cell of ``slug`` (attnkit.setup_cell):
    the generation adds it, so every released notebook, a lesson added later's too, has it."""
    cell = install_cell(ASSIGNMENTS[slug].framework)
    cells = [c for c in notebook["cells"] if c.get("id") != cell["id"]]
    return {**notebook, "cells": [cell, *cells]}


def scripts_on_path() -> dict[str, str]:
    """os.environ with this interpreter's scripts folder first on PATH.

    nbgrader runs its own console scripts (``alembic``, to create and migrate the
    gradebook) by name, so they must be found even when the virtual environment the kit
    runs from was never activated, as in CI or `.venv/bin/attnkit ...`.
    """
    scripts = str(Path(sys.executable).parent)
    path = os.environ.get("PATH", "")
    if scripts not in path.split(os.pathsep):
        path = os.pathsep.join([scripts, path]) if path else scripts
    return {**os.environ, "PATH": path}


def run_nbgrader(root: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=scripts_on_path(),
    )
    if done.returncode != 0:
        raise KitError(
            f"nbgrader {args[0]} failed (exit {done.returncode}):\n{done.stderr[-3000:]}"
        )
    return done


def generate_released(out_dir: Path, slugs: list[str] | None = None) -> list[Path]:
    """Write ``out_dir/<slug>/<slug>.ipynb`` for each assignment, as nbgrader releases it."""
    slugs = slugs or list(ASSIGNMENTS)
    written = []
    with tempfile.TemporaryDirectory(prefix="attnkit-course-") as tmp:
        root = Path(tmp)
        write_course_skeleton(root, slugs)
        generate_assignments(root, slugs)
        for slug in slugs:
            released = root / "release" / slug / f"{slug}.ipynb"
            target = out_dir / slug / released.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(released, target)
            written.append(target)
    return written


def released_differences(committed_dir: Path) -> list[str]:
    """Files under ``committed_dir`` that differ from a fresh generation (empty if none)."""
    with tempfile.TemporaryDirectory(prefix="attnkit-generate-") as tmp:
        fresh = generate_released(Path(tmp))
        problems = []
        for path in fresh:
            committed = committed_dir / path.parent.name / path.name
            if not committed.is_file():
                problems.append(f"{committed} is missing")
            elif committed.read_bytes() != path.read_bytes():
                problems.append(f"{committed} differs from what the source notebook generates")
        return problems


def released_dir(slug: str) -> contextlib.AbstractContextManager[Path]:
    """The folder of released notebooks: ``assignments/`` of a clone, or, for a
    non-editable install (which ships only the source notebooks), one generated now."""
    clone = Path(__file__).resolve().parents[2] / "assignments"
    if (clone / slug / f"{slug}.ipynb").is_file():
        return contextlib.nullcontext(clone)
    return _generated_released(slug)


@contextlib.contextmanager
def _generated_released(slug: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="attnkit-released-") as tmp:
        generate_released(Path(tmp), [slug])
        yield Path(tmp)


_COMMITTED: dict[Path, Path] = {}


def released_path(slug: str, assignments_dir: Path) -> Path:
    """The file of lesson ``slug`` as released: ``assignments_dir/<slug>/<slug>.ipynb`` while
    it is as released, else a copy of that file as the checkout's last commit holds it (made
    once per process). A :class:`KitError` when neither is as released."""
    path = assignments_dir / slug / f"{slug}.ipynb"
    problems = file_problems(path)
    if not problems:
        return path
    key = path.resolve()
    if key not in _COMMITTED:
        committed = committed_bytes(key)
        kept = None if committed is None else json.loads(committed)
        if kept is None or released_problems(kept):
            raise KitError(
                f"{path} is not the lesson as released ({'; '.join(problems[:3])}), and the "
                "checkout's last commit holds no released copy of it either.",
                "Regenerate it with `attnkit generate`; work on a copy (`attnkit start N`).",
            )
        folder = Path(tempfile.mkdtemp(prefix="attnkit-committed-"))
        atexit.register(shutil.rmtree, folder, True)
        _COMMITTED[key] = folder / path.name
        _COMMITTED[key].write_bytes(committed)
    return _COMMITTED[key]


def committed_bytes(path: Path) -> bytes | None:
    """``path`` as the last commit of the git checkout holding it has it (None outside a
    checkout, or when the commit has no such file)."""

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], capture_output=True, timeout=60)

    try:
        top = git("-C", str(path.parent), "rev-parse", "--show-toplevel")
        if top.returncode != 0:
            return None
        root = Path(top.stdout.decode().strip()).resolve()
        relative = path.resolve().relative_to(root).as_posix()
        shown = git("-C", str(root), "show", f"HEAD:{relative}")
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return shown.stdout if shown.returncode == 0 else None
