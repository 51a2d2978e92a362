"""Build the fairness corpus: correct submissions written the many ways students write them.

Each submission is a small Python file ``<lesson>/<name>.py`` holding data only:

* ``STORY``: one line on who wrote it and how;
* ``PATTERNS``: the tags (keys of :data:`PATTERNS`) it exhibits; the test checks each
  tag against the built file, so a tag cannot be claimed without being there;
* ``SAVE``: how the notebook was saved: ``file`` (its file name), ``editor``
  (``jupyter``, ``colab``, ``vscode`` or ``py`` for a "Download as Python" export) and
  ``crlf`` (cell sources with Windows line endings);
* ``EDITS``: a list of ``(operation, cell, text)`` applied in order to the released
  student notebook (``assignments/<lesson>/<lesson>.ipynb``).

Every stub that a file does not *mention* is first filled with the reference answer, so a
file states only its own style and a new exercise adds nothing to it. A file mentions an
exercise when an edit names the exercise's cell, or when an edit's text defines the name
at the top level (``def``, ``class``, an assignment such as ``Name.forward = ...``, or an
import). :attr:`Built.filled` lists the exercises answered by the reference.

``cell`` names a cell by its nbgrader ``grade_id`` (``"softmax"``, ``"test_v1_forward"``),
or by a piece of its source that occurs in exactly one cell. Operations:

* ``fill``: replace the stub's two lines (``# YOUR CODE HERE`` / ``raise ...``) with ``text``;
* ``replace``: replace the whole cell's source with ``text``;
* ``below`` / ``above``: a new code cell with ``text`` just after / before the cell;
* ``end``: a new code cell with ``text`` at the end of the notebook (``cell`` is None);
* ``delete``: remove the cell (``text`` is None);
* ``edit``: ``text`` is ``(old, new)``; ``old`` must occur in the cell.

Because the edits apply to the released notebook, the corpus follows the lessons when
``attnkit generate`` rewrites them.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import importlib.util
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ASSIGNMENTS = ROOT / "assignments"
STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
EDITORS = ("jupyter", "colab", "vscode", "py")


class CorpusError(Exception):
    """A corpus file does not apply to the released notebook; the message names the file."""


@dataclass(frozen=True)
class Built:
    """One built submission: the notebook (also for ``.py`` exports) and the file to write."""

    lesson: str
    name: str
    story: str
    patterns: tuple[str, ...]
    file_name: str
    editor: str
    notebook: dict[str, Any]
    released: dict[str, Any] = field(repr=False)
    filled: tuple[str, ...] = ()
    """The exercises the file does not mention, answered by the reference."""
    base: dict[str, Any] | None = field(default=None, repr=False)
    """The released notebook with those reference answers: what the edits applied to."""

    @property
    def baseline(self) -> dict[str, Any]:
        return self.base if self.base is not None else self.released

    @property
    def student(self) -> str:
        return self.name

    def code_cells(self) -> list[str]:
        return ["".join(c["source"]) for c in self.notebook["cells"] if c["cell_type"] == "code"]

    def student_code(self) -> list[str]:
        """Per code cell, the lines that the baseline (the released notebook and the
        reference answers the file did not write) does not have, in order."""
        released = {
            line.strip()
            for cell in self.baseline["cells"]
            for line in "".join(cell["source"]).splitlines()
        }
        kept = []
        for source in self.code_cells():
            lines = [line for line in source.splitlines() if line.strip() not in released]
            kept.append("\n".join(lines) + "\n")
        return kept

    def file_bytes(self) -> bytes:
        """The bytes a student would hand in."""
        if self.editor == "py":
            return python_export(self.notebook).encode("utf-8")
        return (json.dumps(self.notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")

    def write(self, folder: Path) -> Path:
        """Write the file as ``folder/<student>/<file name>`` (one folder per student)."""
        path = folder / self.student / self.file_name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.file_bytes())
        return path


def lessons() -> list[str]:
    return sorted(p.name for p in HERE.iterdir() if p.is_dir() and p.name[:2].isdigit())


def corpus_files(lesson: str | None = None) -> list[Path]:
    chosen = [lesson] if lesson else lessons()
    return sorted(p for slug in chosen for p in (HERE / slug).glob("*.py"))


def load_spec(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"fair_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def released_notebook(lesson: str) -> dict[str, Any]:
    """The lesson as released (as committed, whatever the working tree's copy holds)."""
    from attnkit_autograder.authoring.released import released_path

    return json.loads(released_path(lesson, ASSIGNMENTS).read_text(encoding="utf-8"))


def stub_cells(notebook: dict[str, Any]) -> dict[int, str]:
    """{cell index: exercise} for the notebook's solution (stub) cells, in order."""
    return {
        index: cell["metadata"]["nbgrader"]["grade_id"]
        for index, cell in enumerate(notebook["cells"])
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution")
    }


def mentioned(notebook: dict[str, Any], edits: list[tuple[Any, ...]]) -> set[str]:
    """The exercises of ``notebook`` (its stub cells' grade ids) that ``edits`` mention: by
    naming the exercise's cell, or by defining the name at the top level of their text."""
    stubs = stub_cells(notebook)
    found: set[str] = set()
    for operation, ref, text, *_ in edits:
        if ref is not None:
            # A ref that names no cell is reported, with the file's name, by apply_edit.
            with contextlib.suppress(CorpusError):
                found.add(stubs.get(find_cell(notebook, ref), ""))
        new = text[1] if operation == "edit" else text
        if isinstance(new, str):
            found |= defined_names(new)
    return found & set(stubs.values())


TOP_LEVEL_NAMES = re.compile(
    r"^(?:(?:def|class)\s+(\w+)|(\w+)(?:\.\w+)*\s*=(?!=)|from\s+\S+\s+import\s+([^\n#]+))",
    re.MULTILINE,
)


def defined_names(text: str) -> set[str]:
    """Names that ``text`` binds at the top level: def, class, assignment or from-import."""
    names: set[str] = set()
    for match in TOP_LEVEL_NAMES.finditer(text.replace("\r\n", "\n")):
        defined, assigned, imported = match.groups()
        if imported is not None:
            parts = imported.replace("(", " ").replace(")", " ").replace(",", " ").split()
            names |= {p for p in parts if p != "as"}
        else:
            names.add(defined or assigned)
    return names


def with_references(lesson: str, skip: set[str]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The released notebook with every stub not in ``skip`` answered by the reference,
    and the exercises so answered."""
    from attnkit_autograder.authoring.corpus import fill_notebook

    released = released_notebook(lesson)
    filled = tuple(name for name in stub_cells(released).values() if name not in skip)
    return fill_notebook(released, lesson, {name: None for name in skip}), filled


def build(path: Path, answer_the_rest: bool = True) -> Built:
    """Apply one corpus file to its lesson's released notebook, the stubs it does not
    mention answered by the reference first (left as stubs without ``answer_the_rest``:
    the notebook then holds the file's own answers only)."""
    lesson = path.parent.name
    spec = load_spec(path)
    released = released_notebook(lesson)
    everything = set(stub_cells(released).values())
    skip = mentioned(released, spec.EDITS) if answer_the_rest else everything
    base, filled = with_references(lesson, skip)
    notebook = copy.deepcopy(base)
    for number, edit in enumerate(spec.EDITS, start=1):
        try:
            apply_edit(notebook, *edit)
        except CorpusError as exc:
            raise CorpusError(f"{path} (edit {number}): {exc}") from None
    try:
        save = {"file": f"{lesson}.ipynb", "editor": "jupyter", "crlf": False, **spec.SAVE}
        if save["editor"] not in EDITORS:
            raise CorpusError(f"SAVE editor {save['editor']!r} is not one of {EDITORS}")
        if save["crlf"]:
            for cell in notebook["cells"]:
                text = "".join(cell["source"]).replace("\r\n", "\n").replace("\n", "\r\n")
                cell["source"] = text.splitlines(keepends=True)
        resave(notebook, save["editor"])
    except CorpusError as exc:
        raise CorpusError(f"{path}: {exc}") from None
    unknown = sorted(set(spec.PATTERNS) - set(PATTERNS))
    if unknown:
        raise CorpusError(f"{path}: unknown pattern tags {unknown}; see builder.PATTERNS")
    return Built(
        lesson,
        path.stem,
        spec.STORY,
        tuple(spec.PATTERNS),
        save["file"],
        save["editor"],
        notebook,
        released,
        filled,
        base,
    )


def build_all(lesson: str | None = None) -> list[Built]:
    return [build(path) for path in corpus_files(lesson)]


# -- edits -------------------------------------------------------------------------------------


def find_cell(notebook: dict[str, Any], ref: str) -> int:
    by_id = [
        i
        for i, c in enumerate(notebook["cells"])
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == ref
    ]
    if by_id:
        return by_id[0]
    by_text = [i for i, c in enumerate(notebook["cells"]) if ref in "".join(c["source"])]
    if len(by_text) != 1:
        raise CorpusError(f"cell {ref!r} matches {len(by_text)} cells; name exactly one")
    return by_text[0]


def code_cell(source: str) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "id": hashlib.sha1(source.encode()).hexdigest()[:8],
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source.strip("\n").splitlines(keepends=True),
    }


def fill_stub(source: str, body: str) -> str:
    lines = source.splitlines()
    for index, line in enumerate(lines[:-1]):
        if line.strip() == STUB[0] and lines[index + 1].strip() == STUB[1]:
            indent = line[: len(line) - len(line.lstrip())]
            filled = [indent + b if b.strip() else "" for b in body.strip("\n").splitlines()]
            return "\n".join(lines[:index] + filled + lines[index + 2 :])
    raise CorpusError("the cell has no stub to fill")


def apply_edit(notebook: dict[str, Any], operation: str, ref: str | None, text: Any) -> None:
    cells = notebook["cells"]
    if operation == "end":
        cells.append(code_cell(text))
        return
    index = find_cell(notebook, ref)
    source = "".join(cells[index]["source"])
    if operation == "fill":
        cells[index]["source"] = fill_stub(source, text).splitlines(keepends=True)
    elif operation == "replace":
        cells[index]["source"] = text.strip("\n").splitlines(keepends=True)
    elif operation == "below":
        cells.insert(index + 1, code_cell(text))
    elif operation == "above":
        cells.insert(index, code_cell(text))
    elif operation == "delete":
        del cells[index]
    elif operation == "edit":
        old, new = text
        if old not in source:
            raise CorpusError(f"{old!r} does not occur in cell {ref!r}")
        cells[index]["source"] = source.replace(old, new).splitlines(keepends=True)
    else:
        raise CorpusError(f"unknown operation {operation!r}")


# -- saves -------------------------------------------------------------------------------------


def strip_nbgrader(notebook: dict[str, Any]) -> None:
    for cell in notebook["cells"]:
        meta = cell.get("metadata", {})
        for key in ("nbgrader", "deletable", "editable"):
            meta.pop(key, None)


def resave(notebook: dict[str, Any], editor: str) -> None:
    """Rewrite the metadata the way the editor's save does (Colab and VS Code drop nbgrader's)."""
    if editor == "colab":
        strip_nbgrader(notebook)
        notebook["metadata"] = {
            "colab": {"provenance": [], "toc_visible": True},
            "kernelspec": {"display_name": "Python 3", "name": "python3"},
            "language_info": {"name": "python"},
        }
        for cell in notebook["cells"]:
            cell.pop("id", None)
            if cell["cell_type"] == "code":
                cell["metadata"] = {"id": f"c{abs(hash(''.join(cell['source']))) % 10**8:08d}"}
        notebook["nbformat_minor"] = 0
    elif editor == "vscode":
        strip_nbgrader(notebook)
        notebook["metadata"] = {
            **notebook["metadata"],
            "language_info": {"name": "python", "version": "3.11.9", "mimetype": "text/x-python"},
            "vscode": {"interpreter": {"hash": "0" * 64}},
        }
    elif editor == "py":
        strip_nbgrader(notebook)


def python_export(notebook: dict[str, Any]) -> str:
    """The file Jupyter's "Download as Python (.py)" writes (nbconvert's PythonExporter)."""
    import nbformat
    from nbconvert.exporters import PythonExporter

    node = nbformat.reads(json.dumps(notebook), as_version=4)
    body, _ = PythonExporter().from_notebook_node(node)
    return body


# -- pattern tags: each is checked against the built submission -------------------------------


def _any_line(pattern: str) -> Callable[[Built], bool]:
    """``pattern`` occurs in the student's own code (lines the released notebook lacks)."""
    compiled = re.compile(pattern, re.MULTILINE)
    return lambda built: any(compiled.search(src) for src in built.student_code())


def _new_cell_defines(where: str) -> Callable[[Built], bool]:
    """A cell the student added defines an exercise whose stub is still in the notebook."""

    def check(built: Built) -> bool:
        released = {"".join(c["source"]) for c in built.baseline["cells"]}
        stubs = [s for s in built.code_cells() if STUB[1] in s.replace("\r\n", "\n")]
        names = {m for s in stubs for m in re.findall(r"^(?:def|class) (\w+)", s, re.M)}
        code = built.notebook["cells"]
        added = [
            i
            for i, c in enumerate(code)
            if c["cell_type"] == "code" and "".join(c["source"]) not in released
        ]
        for i in added:
            source = "".join(code[i]["source"])
            defined = set(re.findall(r"^(?:def|class) (\w+)", source, re.M)) & names
            later = enumerate(code[i:], start=i)
            trailing = all(c["cell_type"] != "code" or j in added for j, c in later)
            if defined and (trailing if where == "end" else not trailing):
                return True
        return False

    return check


def _cells_removed(built: Built) -> bool:
    kept = {"".join(c["source"]).replace("\r\n", "\n") for c in built.notebook["cells"]}
    return any(
        c["cell_type"] == "code" and "".join(c["source"]) not in kept
        for c in built.released["cells"]
        if "lesson.check" in "".join(c["source"]) or "lesson.demo" in "".join(c["source"])
    )


def _parsed_cells(built: Built) -> list[ast.Module]:
    """The cells that parse as plain Python (cells with magics are skipped)."""
    trees = []
    for source in built.code_cells():
        try:
            trees.append(ast.parse(source.replace("\r\n", "\n")))
        except SyntaxError:
            continue
    return trees


def _edited_constructor(built: Built) -> bool:
    """A class whose ``__init__`` is not the released one, word for word."""
    released = {ast.unparse(n) for n in _inits(_released_code(built))}
    for tree in _parsed_cells(built):
        for node in ast.walk(tree):
            is_init = isinstance(node, ast.FunctionDef) and node.name == "__init__"
            if is_init and ast.unparse(node) not in released:
                return True
    return False


def _released_code(built: Built) -> str:
    cells = built.baseline["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def _inits(source: str) -> list[ast.FunctionDef]:
    tree = ast.parse(source)
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "__init__"]


def _shared_helper(built: Built) -> bool:
    """A top-level function of the student's own that two or more top-level definitions use."""
    trees = _parsed_cells(built)
    top = [n for t in trees for n in t.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
    released = _released_code(built)
    helpers = {n.name for n in top if isinstance(n, ast.FunctionDef)}
    helpers = {h for h in helpers if f"def {h}(" not in released}
    for helper in helpers:
        users = {
            n.name
            for n in top
            if n.name != helper
            and any(isinstance(x, ast.Name) and x.id == helper for x in ast.walk(n))
        }
        if len(users) >= 2:
            return True
    return False


def _no_nbgrader(built: Built) -> bool:
    return all("nbgrader" not in c.get("metadata", {}) for c in built.notebook["cells"])


PATTERNS: dict[str, Callable[[Built], bool]] = {
    "block-globals": _any_line(r"^(for|if|with|try)\b[^\n]*:\n(\s+[^\n]*\n)*?\s+\w+\s*(\[|=)"),
    "star-import": _any_line(r"^from \w+(\.\w+)* import \*"),
    "magics": _any_line(r"^\s*(%%?|!)\w"),
    "help-syntax": _any_line(r"^[\w.]+\?{1,2}\s*$"),
    "display": _any_line(r"\bdisplay\("),
    "question-comment": _any_line(r"#[^\n]*\?\s*$"),
    "answer-in-new-cell-below": _new_cell_defines("below"),
    "answer-at-end": _new_cell_defines("end"),
    "cells-deleted-or-edited": _cells_removed,
    "colab-save": lambda b: b.editor == "colab" and _no_nbgrader(b),
    "vscode-save": lambda b: b.editor == "vscode" and _no_nbgrader(b),
    "renamed-file": lambda b: Path(b.file_name).stem != b.lesson,
    "crlf": lambda b: any("\r\n" in s for s in b.code_cells()),
    "py-export": lambda b: b.editor == "py" and b.file_name.endswith(".py"),
    "edited-constructor": _edited_constructor,
    "shared-helper": _shared_helper,
    "print-in-function": _any_line(r"^\s{4,}print\("),
    "warning-in-function": _any_line(r"^\s{4,}warnings\.warn\("),
    "assert-in-function": _any_line(r"^\s{4,}assert "),
    "numpy-ma": _any_line(r"\bnp\.ma\.|\bnumpy\.ma\b|import numpy\.ma|\bma\.masked"),
    "lookalike-names": _any_line(r"def (scaled_dot_product_attention|softmax_rows)\("),
    "imports-own-softmax": _any_line(r"^\s*from __main__ import [^\n]*softmax"),
    "einsum": _any_line(r"\beinsum\("),
    "explicit-loops": _any_line(r"^\s+for \w+ in range\("),
    "tensordot": _any_line(r"\btensordot\("),
    "torch-matmul": _any_line(r"\btorch\.(matmul|bmm)\("),
    "torch-where": _any_line(r"\btorch\.where\("),
    "large-negative": _any_line(r"-1e9|-1e\d\d|finfo\([^)]*\)\.min"),
    "float32-contract": _any_line(r"float32|\.dtype\)|dtype=\w+\.dtype"),
    "writefile-helper": _any_line(r"^%%writefile \w+\.py"),
    "numpy-inside": _any_line(r"\.numpy\(\)"),
    "while-loops": _any_line(r"^\s+while \w"),
    "generator": _any_line(r"^\s+yield\b"),
    "torch-split": _any_line(r"\.split\(\w+, dim=-[12]\)|\.split\(block_\w, -[12]\)"),
    "log-domain": _any_line(r"\blogaddexp\("),
}


def write_corpus(folder: Path, lesson: str | None = None) -> list[tuple[Built, Path]]:
    """Write every submission as ``folder/<student>/<file>``; returns (submission, path) pairs."""
    return [(built, built.write(folder)) for built in build_all(lesson)]


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 2:
        sys.exit("usage: python tests/corpus/fair/builder.py OUT_DIR  (writes the corpus there)")
    for built, path in write_corpus(Path(sys.argv[1])):
        print(f"{built.lesson}  {path}")
