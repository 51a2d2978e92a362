"""Build submissions from the released notebooks: correct ones, and ones with a known mistake.

A *correct* submission is a released notebook whose stubs are replaced by the bodies of
the reference implementations (see ``attnkit_solutions.exercises``). A *buggy* one
replaces one stub with a catalogued mistake instead. The kit's tests, the grader's
corpus and the benchmark all build their submissions here, from the real student
notebooks, so they exercise exactly what students hand in.
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.diagnosis import Mistake, load_mistakes
from attnkit_solutions.exercises import reference_object

__all__ = [
    "CorpusCase",
    "Mistake",
    "case_notebook",
    "fill_notebook",
    "hostile_corpus",
    "hostile_notebook",
    "load_mistakes",
    "read_case",
    "released_notebook",
]

STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")


def reference_body(slug: str, exercise: str) -> str:
    """The body of the reference answer (docstring removed), dedented to column 0."""
    source = textwrap.dedent(inspect.getsource(reference_object(slug, exercise)))
    function = ast.parse(source).body[0]
    body = function.body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    lines = source.splitlines()
    return textwrap.dedent("\n".join(lines[body[0].lineno - 1 : body[-1].end_lineno]))


def fill_stub(source: str, body: str) -> str:
    """Replace the two stub lines in a cell's source with ``body``, at the stub's indentation."""
    lines = source.splitlines()
    for index, line in enumerate(lines[:-1]):
        if line.strip() == STUB[0] and lines[index + 1].strip() == STUB[1]:
            indent = line[: len(line) - len(line.lstrip())]
            filled = [indent + b if b.strip() else "" for b in body.splitlines()]
            return "\n".join(lines[:index] + filled + lines[index + 2 :])
    raise ValueError("no stub (# YOUR CODE HERE / raise NotImplementedError()) in this cell")


def released_notebook(slug: str, assignments_dir: Path) -> dict[str, Any]:
    return json.loads((assignments_dir / slug / f"{slug}.ipynb").read_text(encoding="utf-8"))


def fill_notebook(
    notebook: dict[str, Any], slug: str, overrides: dict[str, str] | None = None
) -> dict[str, Any]:
    """A copy of ``notebook`` with every stub answered: by ``overrides[exercise]`` if given,
    else by the reference body. An override of None leaves that stub unanswered."""
    overrides = overrides or {}
    filled = copy.deepcopy(notebook)
    for cell in filled["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if not meta.get("solution") or cell["cell_type"] != "code":
            continue
        exercise = meta["grade_id"]
        body = overrides[exercise] if exercise in overrides else reference_body(slug, exercise)
        if body is None:
            continue
        source = "".join(cell["source"])
        cell["source"] = fill_stub(source, body).splitlines(keepends=True)
    return filled


def write_notebook(notebook: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


# -- hostile and broken submissions --------------------------------------------------------------
#
# Each case starts from a correct lesson-2 notebook and plants its hostility in
# SelfAttention_v2.forward, the one exercise that no other exercise depends on, so the
# expected outcome is exact: that exercise earns nothing, everything else keeps its
# credit. Top-level mischief goes into an extra code cell.

HOSTILE_SLUG = "02_self_attention"
HOSTILE_TARGET = "SelfAttention_v2"
ZEROS = "return torch.zeros(*x.shape[:-1], self.W_query.out_features)"

CORRECT_V2 = (
    "queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)\n"
    "weights = softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)\n"
    "return weights @ values"
)

# Sabotage lives in a helper that the exercise calls: code no exercise refers to is
# never run by the grader (see Definitions.needed_for), which would make it harmless.
HOSTILE_BODIES: dict[str, str] = {
    "patches_numpy_torch_builtins": "sabotage()\n" + ZEROS,
    "tampers_with_the_grader": "sabotage()\n" + CORRECT_V2,
    "infinite_loop": "while True:\n    pass",
    "infinite_loop_ignoring_signals": (
        "import signal\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "while True:\n    pass"
    ),
    "unbounded_allocation": (
        "blocks = []\nwhile True:\n    blocks.append(bytearray(256 * 1024 * 1024))"
    ),
    "os_exit": "import os\nos._exit(3)",
    "segfault": "import ctypes\nreturn ctypes.string_at(0)",
    "fork_bomb": (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    ),
    "reads_the_references": (
        "from attnkit_solutions.self_attention import SelfAttention_v2 as Reference\n"
        "return Reference.forward(self, x)"
    ),
    "returns_numpy": (
        "queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)\n"
        "weights = softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)\n"
        "return (weights @ values).detach().numpy()"
    ),
    "nan_output": "return torch.full((*x.shape[:-1], self.W_query.out_features), float('nan'))",
    "forbidden_library_attention": (
        "import torch.nn.functional as F\n"
        "return F.scaled_dot_product_attention(self.W_query(x), self.W_key(x), self.W_value(x))"
    ),
    "prints_megabytes": (
        'print("x" * 5_000_000)\n'
        "queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)\n"
        "weights = softmax(queries @ keys.transpose(-2, -1) / keys.shape[-1] ** 0.5, dim=-1)\n"
        "return weights @ values"
    ),
}

HOSTILE_CELLS: dict[str, str] = {
    "patches_numpy_torch_builtins": (
        "def sabotage():\n"
        "    import builtins, numpy, torch\n"
        "    numpy.allclose = lambda *a, **k: True\n"
        "    numpy.array_equal = lambda *a, **k: True\n"
        "    numpy.testing.assert_allclose = lambda *a, **k: None\n"
        "    torch.allclose = lambda *a, **k: True\n"
        "    torch.testing.assert_close = lambda *a, **k: None\n"
        "    builtins.abs = lambda value: 0\n"
    ),
    "prints_megabytes": 'print("y" * 20_000_000)\n',
    "tampers_with_the_grader": (
        "def sabotage():\n"
        "    import os, signal, pathlib\n"
        "    for target in {targets}:\n"
        "        try:\n"
        "            pathlib.Path(target).write_text('tampered')\n"
        "        except OSError:\n"
        "            pass\n"
        "    try:\n"
        "        os.kill(os.getppid(), signal.SIGKILL)\n"
        "    except OSError:\n"
        "        pass\n"
        "    try:\n"
        "        return open({secret!r}).read()\n"
        "    except OSError:\n"
        "        return None\n"
    ),
}


def add_cell(notebook: dict[str, Any], source: str, index: int | None = None) -> dict[str, Any]:
    """A copy of ``notebook`` with a code cell holding ``source`` at ``index`` (default: last)."""
    changed = copy.deepcopy(notebook)
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {},
        "outputs": [],
        "source": source.splitlines(keepends=True),
    }
    changed["cells"].insert(len(changed["cells"]) if index is None else index, cell)
    return changed


def drop_cells(notebook: dict[str, Any], keep: Any) -> dict[str, Any]:
    changed = copy.deepcopy(notebook)
    changed["cells"] = [c for c in changed["cells"] if keep(c)]
    return changed


def to_nbformat3(notebook: dict[str, Any]) -> dict[str, Any]:
    cells = [
        {"cell_type": "code", "input": c["source"], "language": "python", "outputs": []}
        for c in notebook["cells"]
        if c["cell_type"] == "code"
    ]
    return {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": cells}]}


def hostile_notebook(
    released: dict[str, Any], name: str, cells: dict[str, str] = HOSTILE_CELLS
) -> dict[str, Any]:
    """A correct lesson-2 notebook with hostile case ``name`` planted in SelfAttention_v2
    (and its extra top-level cell from ``cells``, if it has one)."""
    notebook = fill_notebook(released, HOSTILE_SLUG, {HOSTILE_TARGET: HOSTILE_BODIES[name]})
    return add_cell(notebook, cells[name]) if name in cells else notebook


def hostile_corpus(
    out_dir: Path, assignments_dir: Path, tamper_targets: list[str], secret: str
) -> dict[str, Path]:
    """Write the hostile and broken submissions (one student each) as single files."""
    slug, target = HOSTILE_SLUG, HOSTILE_TARGET
    released = released_notebook(slug, assignments_dir)
    correct = fill_notebook(released, slug)
    files: dict[str, Path] = {}

    def put(name: str, notebook: dict[str, Any] | None = None, raw: bytes | None = None) -> None:
        path = out_dir / f"{name}_{slug}.ipynb"
        if raw is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(raw)
        else:
            write_notebook(notebook, path)
        files[name] = path

    cells = dict(HOSTILE_CELLS)
    cells["tampers_with_the_grader"] = cells["tampers_with_the_grader"].format(
        targets=tamper_targets, secret=secret
    )
    put("correct", correct)
    put("untouched_stubs", released)
    for name in HOSTILE_BODIES:
        put(name, hostile_notebook(released, name, cells))

    def is_test_cell(cell: dict[str, Any]) -> bool:
        return bool(cell.get("metadata", {}).get("nbgrader", {}).get("grade"))

    wrong_v2 = fill_notebook(released, slug, {target: ZEROS})
    put("deleted_test_cells", drop_cells(wrong_v2, lambda c: not is_test_cell(c)))
    edited = copy.deepcopy(wrong_v2)
    for cell in edited["cells"]:
        if is_test_cell(cell):
            cell["source"] = ["print('all tests passed')\n"]
    put("edited_test_cells", edited)
    put(
        "missing_class",
        drop_cells(
            correct, lambda c: c.get("metadata", {}).get("nbgrader", {}).get("grade_id") != target
        ),
    )
    wrong_signature = copy.deepcopy(correct)
    for cell in wrong_signature["cells"]:
        cell["source"] = [
            line.replace(
                "def copy_v2_weights_into_v1(v2: SelfAttention_v2, v1: SelfAttention_v1)",
                "def copy_v2_weights_into_v1(v2: SelfAttention_v2)",
            )
            for line in cell["source"]
        ]
    put("wrong_signature", wrong_signature)
    put("nbformat3", to_nbformat3(correct))
    put("malformed_json", raw=b'{"cells": [{"cell_type": "code", "source": ["def f(')
    put("not_utf8", raw=b"\xff\xfe\x00\x01" + json.dumps(correct).encode("utf-16"))
    put("empty", raw=b"")
    return files


# -- the independent diagnosis corpus -----------------------------------------------------------
#
# tests/corpus/mistakes/*.py hold buggy (and correct) answers written apart from the
# catalogue. Each file is plain Python: a header, then for each exercise it answers a
# function of the exercise's name (or a class of that name with a ``forward``), whose
# body replaces the exercise's stub. Every other exercise gets the reference answer.
#
#     # assignment: 03_causal_attention
#     # expect: apply_causal_mask=mask_with_zero    (or "none", or "correct")
#     def apply_causal_mask(scores):
#         ...


@dataclass(frozen=True)
class CorpusCase:
    """One submission of the corpus and what its diagnosis must be."""

    name: str
    slug: str
    expect: str
    """``exercise=mistake_id``: that mistake must be named there and nothing else anywhere;
    ``none``: a mistake outside the catalogue, so nothing may be named; ``correct``: full
    marks and no hint at all."""
    answers: dict[str, str]

    @property
    def expected(self) -> tuple[str, str] | None:
        """(exercise, mistake id) for a catalogued mistake, else None."""
        if "=" not in self.expect:
            return None
        exercise, mistake = self.expect.split("=", 1)
        return exercise.strip(), mistake.strip()


def read_case(path: Path) -> CorpusCase:
    """Parse one corpus file; a missing header or a stray definition is an error here."""
    text = path.read_text(encoding="utf-8")
    header = dict(
        line[1:].strip().split(":", 1)
        for line in text.splitlines()
        if line.startswith("# ") and ":" in line[:20]
    )
    try:
        slug, expect = header["assignment"].strip(), header["expect"].strip()
    except KeyError as exc:
        raise ValueError(f"{path}: the header needs '# {exc.args[0]}: ...'") from None
    answers = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            methods = [
                n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "forward"
            ]
            if not methods:
                raise ValueError(f"{path}: class {node.name} has no forward method")
            answers[node.name] = definition_body(text, methods[0])
        elif isinstance(node, ast.FunctionDef):
            answers[node.name] = definition_body(text, node)
    if not answers:
        raise ValueError(f"{path}: answers no exercise")
    return CorpusCase(path.stem, slug, expect, answers)


def definition_body(text: str, function: ast.FunctionDef) -> str:
    """The source of a function's body, dedented to column 0."""
    lines = text.splitlines()
    return textwrap.dedent(
        "\n".join(lines[function.body[0].lineno - 1 : function.body[-1].end_lineno])
    )


def case_notebook(case: CorpusCase, assignments_dir: Path) -> dict[str, Any]:
    """The released notebook with the case's answers, and the references everywhere else."""
    return fill_notebook(released_notebook(case.slug, assignments_dir), case.slug, case.answers)
