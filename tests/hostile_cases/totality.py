"""The grader never crashes on anything a student wrote, and never blames itself for it.

Text Python's parser chokes on (thousands of unary minus signs, a NUL byte), a forged
reply whose array shape is 1e400 or whose description lacks what a test reads, and a
notebook that produces thousands of notes: each costs at most the attacked exercise, never
the whole submission, and never ends as the grader's fault.
"""

from __future__ import annotations

from typing import Any

from attnkit_autograder.authoring.corpus import add_cell, fill_notebook

from .classic import KEEPS_ALL, LOSES_V2, SLUG, V2_CELL, Case, Targets, _forge


def cases(targets: Targets) -> list[Case]:
    return [
        Case("parser_memory_error", "file", KEEPS_ALL, V2_CELL, "passed",
             extra="x = 1\n" + "-" * 7000 + "x\n"),
        Case("nul_byte_in_a_cell", "file", KEEPS_ALL, V2_CELL, "passed",
             extra="lesson.check(softmax)\x00\n"),
        Case("deeply_nested_cell", "file", KEEPS_ALL, V2_CELL, "passed",
             extra="y = " + "(" * 5000 + "1" + ")" * 5000 + "\n"),
        # IPython runs a cell indented by one space, or pasted with prompts; the scan reads
        # it as IPython does, and notes a cell it cannot read at all.
        Case("indented_cell_read_as_ipython_reads_it", "file", KEEPS_ALL, V2_CELL, "passed",
             extra=" import sys\n here = sys._getframe(0)\n", note="sys._getframe"),
        Case("prompted_cell_read_as_ipython_reads_it", "file", KEEPS_ALL, V2_CELL, "passed",
             extra=">>> import gc\n>>> found = gc.get_objects()\n", note="gc.get_objects"),
        _forge(
            "reply_shape_1e400",
            "malformed reply",
            "ref = {'__nd__': [0, 4], 'dtype': '<f4', 'shape': [float('inf')]}\n"
            "out = {'kind': 'tensor', 'dtype': 'float32', 'array': ref}\n"
            "ok = {'out': out, 'params': {}, 'buffers': {}, 'grads': {}, 'inputs_after': []}\n"
            "_os.write(fd, frame_of({'nonce': nonce, 'ok': ok}, bytes(4)))",
        ),
        _forge(
            "reply_missing_keys",
            "malformed reply",
            "_os.write(fd, frame_of({'nonce': nonce, 'ok': {'out': {'kind': 'sequence'}}}))",
        ),
        _forge(
            "reply_unhashable_dtype",
            "malformed reply",
            "ref = {'__nd__': [0, 4], 'dtype': ['<f4'], 'shape': [1]}\n"
            "ok = {'out': {'kind': 'tensor', 'dtype': 'float32', 'array': ref}}\n"
            "_os.write(fd, frame_of({'nonce': nonce, 'ok': ok}, bytes(4)))",
        ),
    ]  # fmt: skip


NOTE_CELLS = 3000


def file_cases(released: dict[str, Any]) -> dict[str, tuple[Case, dict[str, Any] | bytes]]:
    """A correct notebook followed by thousands of cells that each raise (a note each)."""
    noisy = add_cell(fill_notebook(released, SLUG), "raise ValueError('noise')")
    noise = noisy["cells"][-1]
    noisy["cells"] += [
        {**noise, "source": [f"raise ValueError('noise {n} ' + 'x' * 2000)\n"]}
        for n in range(NOTE_CELLS)
    ]
    wrong_v2 = fill_notebook(released, SLUG, {"SelfAttention_v2": "return [x]"})
    return {
        "twenty_thousand_notes": (
            Case("twenty_thousand_notes", "limit", KEEPS_ALL, V2_CELL, "passed",
                 note="more notes"),
            noisy,
        ),
        "v2_returns_a_list": (
            Case("v2_returns_a_list", "file", LOSES_V2, V2_CELL, "failed", "a list"),
            wrong_v2,
        ),
    }  # fmt: skip
