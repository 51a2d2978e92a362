"""A learner's own workspace, and whether a released notebook is still as released.

The released notebooks (``assignments/`` in a clone, ``notebooks/`` in the student bundle)
are the kit's, not the learner's: the student bundle, the kit's tests and the demo build
from them. ``attnkit start N`` copies lesson N into ``work/``, where the learner fills it in
and ``attnkit check N`` finds it first.

:func:`released_problems` says whether a notebook is still as nbgrader released it: every
cell nbgrader recorded a checksum for (the stubs, the graded cells, the locked cells) still
has it, computed as nbgrader computes it, and no cell has been run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from .errors import KitError

WORK = "work"
"""The folder ``attnkit start`` copies lessons into (git-ignored in a clone of the kit)."""


def _text(source: Any) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def nbgrader_checksum(cell: dict[str, Any]) -> str:
    """The checksum nbgrader records for a cell (``nbgrader.utils.compute_checksum``,
    computed on the notebook's JSON, without loading nbgrader: a test holds the two equal)."""
    meta = cell.get("metadata", {}).get("nbgrader", {})
    grade, solution = bool(meta.get("grade", False)), bool(meta.get("solution", False))
    locked = False if solution else (True if grade else bool(meta.get("locked", False)))
    digest = hashlib.md5()
    for part in (_text(cell.get("source", "")), cell.get("cell_type", "")):
        digest.update(part.encode("utf-8"))
    for flag in (grade, solution, locked):
        digest.update(str(flag).encode("utf-8"))
    digest.update(str(meta.get("grade_id", "")).encode("utf-8"))
    if grade:
        digest.update(str(float(meta["points"])).encode("utf-8"))
    return digest.hexdigest()


def released_problems(notebook: Any) -> list[str]:
    """Why ``notebook`` (its JSON) is no longer the notebook as released: each cell whose
    nbgrader checksum changed (a stub filled in, a check edited) and each cell that has
    been run. Empty when it is as released."""
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return ["it holds no cells"]
    problems = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        recorded = meta.get("checksum") if isinstance(meta, dict) else None
        if recorded and recorded != nbgrader_checksum(cell):
            what = "solution cell" if meta.get("solution") else "cell"
            change = "no longer holds the stub" if meta.get("solution") else "was changed"
            problems.append(f"its {what} {meta.get('grade_id')!r} {change}")
        elif cell.get("cell_type") == "code" and (
            cell.get("outputs") or cell.get("execution_count") is not None
        ):
            problems.append(f"its code cell {cell.get('id', '?')!r} has been run")
    return problems


def file_problems(path: Path) -> list[str]:
    """:func:`released_problems` of a notebook file (one that cannot be read is a problem)."""
    try:
        return released_problems(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError) as exc:
        return [f"it cannot be read as a notebook ({exc})"]


def released_source(slug: str, root: Path) -> Path | None:
    """Lesson ``slug`` as released, in the folder ``root``: a clone's ``assignments/`` or
    the student bundle's ``notebooks/``."""
    for candidate in (
        root / "assignments" / slug / f"{slug}.ipynb",
        root / "notebooks" / f"{slug}.ipynb",
    ):
        if candidate.is_file():
            return candidate
    return None


def start_lesson(slug: str, root: Path) -> tuple[Path, bool]:
    """Copy lesson ``slug`` into ``root/work/`` to work on; (its path, whether it was
    copied now). A copy already there is the learner's work: it is kept, never replaced."""
    target = root / WORK / f"{slug}.ipynb"
    if target.exists():
        return target, False
    source = released_source(slug, root)
    if source is None:
        raise KitError(
            f"found no released {slug}.ipynb under {root} (assignments/ or notebooks/).",
            "Run this in the kit's clone or the student bundle's folder.",
        )
    problems = file_problems(source)
    if problems:
        raise KitError(
            f"{source} is no longer the lesson as released: {'; '.join(problems[:3])}.",
            "Restore it (in a clone: git checkout -- assignments/), then start again.",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target, True


INSTRUCTOR_PLUGINS = (
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:assignment-list",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:menu",
)
"""nbgrader's JupyterLab plugins a learner has no use for (its Validate button stays)."""
INSTRUCTOR_SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.course_list",
    "nbgrader.server_extensions.assignment_list",
)


def learner_jupyter_config() -> Path:
    """A Jupyter configuration folder that hides nbgrader's instructor tools: ``attnkit lab``
    puts it first on ``JUPYTER_CONFIG_PATH`` for the JupyterLab it starts, and changes no
    one else's configuration. It lives beside the progress record."""
    from .progress import record_path

    folder = record_path().parent / "jupyter-learner"
    (folder / "labconfig").mkdir(parents=True, exist_ok=True)
    page = {"disabledExtensions": dict.fromkeys(INSTRUCTOR_PLUGINS, True)}
    (folder / "labconfig" / "page_config.json").write_text(json.dumps(page, indent=1) + "\n")
    server = {
        "ServerApp": {"jpserver_extensions": dict.fromkeys(INSTRUCTOR_SERVER_EXTENSIONS, False)}
    }
    (folder / "jupyter_server_config.json").write_text(json.dumps(server, indent=1) + "\n")
    return folder
