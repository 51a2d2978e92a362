"""Which of a lesson's released cells the sandbox may compute once for every submission.

A released code cell is *shareable* when nothing the student writes is part of it: it is
neither a solution nor a graded cell (nbgrader releases it as it is), it is plain Python,
and every name it reads before binding it is a module that the lesson's locked setup cells
import (``torch``, ``nn``) or a builtin, so it calls no code of the student's. The zygote
computes each once per sandbox and proves its results depend on nothing else; a worker
hands them to the notebook when the submission's cell is the released one, unchanged, and
everything the cell reads is still what it was (see
:mod:`attnkit.student_process.shared_cells`). Every other cell runs as Jupyter runs it.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
from typing import Any

from attnkit.notebook_code import parse_python
from attnkit.student_process.shared_cells import cell_reads

from ..lessons.rubric import source_notebook


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else str(source)
    return text.replace("\r\n", "\n")


def imported_modules(source: str) -> dict[str, str]:
    """{name: module path} for every name the cell's import statements bind (a name
    imported from a module may be a submodule: the zygote checks that it is one)."""
    tree = parse_python(source)
    found: dict[str, str] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    found[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
    return found


@functools.cache
def shareable_cells(slug: str) -> tuple[dict[str, Any], ...]:
    """The lesson's shareable cells, each ``{"source", "modules"}`` (what the zygote is
    sent): ``modules`` binds the names it reads from the setup's imports."""
    notebook = json.loads(source_notebook(slug).read_text(encoding="utf-8"))
    modules: dict[str, str] = {}
    shareable = []
    for cell in notebook["cells"]:
        if cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata", {}).get("nbgrader", {})
        source = _source(cell)
        if meta.get("solution") or meta.get("grade"):
            continue
        if meta.get("locked"):
            modules |= imported_modules(source)
            continue
        reads = cell_reads(source)
        if reads is None or not reads.free <= set(modules) | set(dir(builtins)):
            continue
        used = {name: modules[name] for name in sorted(reads.free) if name in modules}
        shareable.append({"source": source, "modules": used})
    return tuple(shareable)


TRANSFORM_BYTES = 24_000
"""Bytes of released cells (as JSON) sent only to be transformed: the zygote reads one
request of at most 64 KiB."""


@functools.cache
def zygote_cells(slug: str) -> tuple[dict[str, Any], ...]:
    """What the sandbox's zygote is sent for ``slug``: the shareable cells, to compute once,
    and every other released code cell (``modules`` None: never computed there), whose
    IPython transformation the zygote then works out once for all workers."""
    notebook = json.loads(source_notebook(slug).read_text(encoding="utf-8"))
    shareable = shareable_cells(slug)
    sources = {cell["source"] for cell in shareable}
    released = []
    room = TRANSFORM_BYTES
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") != "code" or meta.get("solution"):
            continue
        source = _source(cell)
        size = len(json.dumps(source))  # as the request carries it (escapes included)
        if source not in sources and size < room:
            sources.add(source)
            room -= size
            released.append({"source": source, "modules": None})
    return shareable + tuple(released)
