"""Copies of the corpora's honest notebooks, and how the similarity review ranks them.

* The *honest* notebooks of a lesson were written apart: the fairness corpus's
  (``fair/<lesson>/*.py``), each with its own answers only (an exercise it does not answer
  stays a stub, where the fairness tests answer it with the reference), and the first
  notebook of the independent corpus (``independent/<lesson>/``), by another author.
* A *copy* is an honest notebook's file, byte for byte; a *renamed copy* is the same
  notebook with every function's local names renamed, its comments replaced and its
  lines respaced: the same program (checked on the syntax tree), cell by cell.

:func:`measure` scores every pair with :mod:`attnkit_autograder.platforms.similarity` and prints,
per lesson, the lowest score of a copy pair, the highest of an honest pair, and the gap.
A pair's score is what ranks it (the mean of its two shares). Run it with the kit's
virtual environment: ``.venv/bin/python tests/corpus/copies.py``.
"""

from __future__ import annotations

import ast
import copy
import io
import json
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "fair"))

import builder  # noqa: E402

from attnkit_autograder.platforms.similarity import (  # noqa: E402
    OwnCode,
    Template,
    own_code,
    released_template,
    scored_pairs,
)

# -- renamed copies ------------------------------------------------------------------------------


def local_names(tree: ast.Module) -> dict[tuple[int, int], str]:
    """{(line, byte column): name} of every use of a function's local variable: a name
    bound inside a function that is no parameter (of any function or lambda in the cell)
    and not declared global or nonlocal."""
    arguments = {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    declared = {
        name
        for node in ast.walk(tree)
        if isinstance(node, ast.Global | ast.Nonlocal)
        for name in node.names
    }
    found = {}
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        names = [n for n in ast.walk(function) if isinstance(n, ast.Name)]
        bound = {n.id for n in names if isinstance(n.ctx, ast.Store)} - arguments - declared
        found.update({(n.lineno, n.col_offset): n.id for n in names if n.id in bound})
    return found


def shape(
    source: str, renames: dict[tuple[int, int], str] | None = None, prefix: str = "my_"
) -> str | None:
    """The syntax tree of ``source`` without positions, with the names at ``renames``'s
    places renamed, as text; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and (node.lineno, node.col_offset) in (renames or {}):
            node.id = renamed_name(node.id, prefix)
    return ast.dump(tree)


def renamed_name(name: str, prefix: str) -> str:
    return f"{prefix}{name.lower()}"


def rewritten(source: str, own: set[str], prefix: str) -> str:
    """One cell with its local names renamed and its comments dropped, and the space around
    ``,`` and ``=`` dropped on its own lines (those whose text is in ``own``): token by
    token, so no string changes."""
    renames = local_names(ast.parse(source))
    lines = source.splitlines(keepends=True)
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    edits: dict[tuple[int, int], tuple[int, str]] = {}  # (row, col): (end col, new text)
    for before, token, after in zip([None, *tokens], tokens, [*tokens[1:], None], strict=False):
        (row, col), (_, end) = token.start, token.end
        text = lines[row - 1] if row <= len(lines) else ""
        if token.type == tokenize.NAME and (row, len(text[:col].encode())) in renames:
            edits[(row, col)] = (end, renamed_name(token.string, prefix))
        elif token.type == tokenize.COMMENT:
            edits[(row, col)] = (end, "")
        elif token.string in (",", "=") and text.strip() in own:
            if after is not None and after.start[0] == row and after.start[1] > end:
                edits[(row, end)] = (after.start[1], "")
            if before is not None and token.string == "=" and before.end[0] == row:
                edits[(row, before.end[1])] = (col, "")
    for (row, col), (end, text) in sorted(edits.items(), reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + text + line[end:]
    return "# my answer, in my own words\n" + "".join(lines)


def renamed_cell(source: str, released: set[str], prefix: str = "my_") -> str:
    """``source`` rewritten (see :func:`rewritten`), or as it is when the rewrite is not the
    same program with the same names renamed (or the cell is not plain Python)."""
    expected = None
    own = {line.strip() for line in source.splitlines()} - released
    if not own - {""}:
        return source  # the released notebook's cell, untouched
    try:
        expected = shape(source, local_names(ast.parse(source)), prefix)
        new = rewritten(source, own, prefix)
    except (SyntaxError, tokenize.TokenError, IndentationError):
        return source
    return new if expected is not None and shape(new) == expected else source


def renamed_notebook(
    notebook: dict[str, Any], released: dict[str, Any], prefix: str = "my_"
) -> dict[str, Any]:
    """A copy of ``notebook`` whose code cells are renamed (see :func:`renamed_cell`)."""
    given = {line.strip() for c in released["cells"] for line in "".join(c["source"]).splitlines()}
    changed = copy.deepcopy(notebook)
    for cell in changed["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            cell["source"] = renamed_cell(source, given, prefix).splitlines(keepends=True)
    return changed


# -- the lessons' honest notebooks -----------------------------------------------------------------


@dataclass(frozen=True)
class Honest:
    """One honest submission: who, its file name, its bytes, and its renamed copy's bytes."""

    student: str
    file_name: str
    data: bytes
    renamed: bytes


def file_bytes(notebook: dict[str, Any], editor: str) -> bytes:
    if editor == "py":
        return builder.python_export(notebook).encode("utf-8")
    return (json.dumps(notebook, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


DEFENCE_CASES = frozenset(
    [
        "abena_pip_first",
        "kemal_torch_as_np",
        "liam_torch_reference",
        "oksana_tqdm_sweep",
        "ursula_benchmark",
        "hugo_shape_error",
        "ivy_bias_error_with_module",
        "jamal_multi_base",
        "lorna_colab_helper_redefined",
        "pavel_threadpool",
        "sofia_capture_pip",
        "vera_sleep_between_runs",
        "wanda_compare_library",
        "bruno_input_name",
        "mateo_neg_constant",
        "nico_sleepy_timing",
        "olga_float64_scratch",
        "rhea_num_threads",
        "xena_sdpa_reference",
        "dario_drive_mount",
        "omar_F_reused",
        "sami_tqdm_heads",
        "wil_timeit_heads",
        "yosef_torch_mha_check",
        "carmen_colab_setup",
        "elena_closure",
        "farid_param_groups",
        "gosia_closure_param_groups",
        "petra_loss_fn_swapped",
        "tariq_own_training_loop",
        "yusuf_speed_table",
        "zoe_sdpa_before_def",
    ]
)
"""Fairness cases written against the sandbox's defences (threads, scratch cells, library
comparisons), often one small change to another style: not distinct styles of the answer, so
the similarity corpus, built on distinct styles, leaves them out."""


def honest_notebooks(lesson: str) -> list[Honest]:
    """The lesson's honest notebooks (see the module's docstring), with renamed copies."""
    released = builder.released_notebook(lesson)
    found = []
    for path in builder.corpus_files(lesson):
        if path.stem in DEFENCE_CASES:
            continue
        built = builder.build(path, answer_the_rest=False)
        renamed = file_bytes(renamed_notebook(built.notebook, released), built.editor)
        found.append(Honest(built.name, built.file_name, built.file_bytes(), renamed))
    independent = sorted((HERE / "independent" / lesson).glob("*.ipynb"))[:1]
    for path in independent:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        renamed = file_bytes(renamed_notebook(notebook, released), "jupyter")
        name = path.name.removesuffix(f"_{lesson}.ipynb")
        found.append(Honest(f"independent-{name}", path.name, path.read_bytes(), renamed))
    return found


# -- the measurement ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Figures:
    """One lesson's scores: each copy pair's and each honest pair's."""

    lesson: str
    copies: dict[tuple[str, str], float]
    honest: dict[tuple[str, str], float]

    @property
    def gap(self) -> float:
        return min(self.copies.values()) - max(self.honest.values())


def scores(lesson: str, template: Template | None = None) -> Figures:
    """Every honest notebook of ``lesson``, its copy and its renamed copy in one class,
    each pair scored; pairs that share nothing score 0."""
    template = template or released_template(lesson)
    codes, originals = [], []
    for honest in honest_notebooks(lesson):
        original = OwnCode(honest.student, own_code(honest.data, honest.file_name, template))
        renamed = own_code(honest.renamed, honest.file_name, template)
        codes += [original, OwnCode(f"{honest.student}~copy", original.code)]
        codes.append(OwnCode(f"{honest.student}~renamed", renamed))
        originals.append(honest.student)
    found = {(p.a.student, p.b.student): p.score for p in scored_pairs(codes, template)}

    def score(a: str, b: str) -> float:
        return found.get((a, b), found.get((b, a), 0.0))

    copies = {(s, f"{s}~{kind}"): score(s, f"{s}~{kind}") for s in originals
              for kind in ("copy", "renamed")}  # fmt: skip
    honest_pairs = {
        (a, b): score(a, b) for i, a in enumerate(originals) for b in originals[i + 1 :]
    }
    return Figures(lesson, copies, honest_pairs)


def report(figures: Figures) -> str:
    """One line of figures: the lowest byte copy and renamed copy, the highest honest pair."""
    lowest = {
        kind: min(
            (score, pair[1]) for pair, score in figures.copies.items() if pair[1].endswith(kind)
        )
        for kind in ("~copy", "~renamed")
    }
    high = max(figures.honest, key=figures.honest.__getitem__)
    return (
        f"{figures.lesson}: lowest copy {lowest['~copy'][0]:.2f}, lowest renamed copy "
        f"{lowest['~renamed'][0]:.2f} ({lowest['~renamed'][1]}); highest of "
        f"{len(figures.honest)} honest pairs {figures.honest[high]:.2f} ({high[0]} ~ {high[1]}); "
        f"gap {figures.gap:.2f}"
    )


def measure() -> list[Figures]:
    found = [scores(lesson) for lesson in builder.lessons()]
    for figures in found:
        print(report(figures))
    return found


def class_timing(count: int, lesson: str = "02_self_attention") -> float:
    """Seconds to score every pair of a class of ``count`` (the honest notebooks, each
    student's copy renamed its own way, so no two are alike as text), printed."""
    import time

    template = released_template(lesson)
    released = builder.released_notebook(lesson)
    bases = [json.loads(h.data) for h in honest_notebooks(lesson) if h.file_name.endswith("nb")]
    start = time.monotonic()
    codes = [
        OwnCode(f"s{i}", own_code(
            json.dumps(renamed_notebook(bases[i % len(bases)], released, f"s{i}_")).encode(),
            f"s{i}.ipynb", template))
        for i in range(count)
    ]  # fmt: skip
    pairs = scored_pairs(codes, template)
    seconds = time.monotonic() - start
    print(f"a class of {count} ({lesson}): {len(pairs)} pairs scored in {seconds:.1f} s")
    return seconds


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["--class-of"]:
        class_timing(int(sys.argv[2]))
    else:
        measure()
