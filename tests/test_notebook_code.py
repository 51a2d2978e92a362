"""Reading and running submissions as Jupyter's Run All does; damaged files give clear messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.notebook_code import NotebookError, _nesting_depth, read_cells
from attnkit.notebook_run import load_notebook
from attnkit_autograder.authoring.released import released_path

ROOT = Path(__file__).resolve().parents[1]


def notebook(path: Path, *sources: str, nbformat: int = 4, grade_ids: dict | None = None) -> Path:
    grade_ids = grade_ids or {}
    if nbformat == 4:
        cells = []
        for index, source in enumerate(sources):
            metadata = {}
            if index in grade_ids:
                metadata = {"nbgrader": {"grade": True, "grade_id": grade_ids[index]}}
            cells.append({"cell_type": "code", "source": source, "metadata": metadata})
        data = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}
    else:
        cells = [{"cell_type": "code", "input": s, "outputs": []} for s in sources]
        data = {"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": cells}]}
    path.write_text(json.dumps(data))
    return path


def test_globals_built_in_blocks_star_imports_and_ipython_syntax_all_work(tmp_path) -> None:
    path = notebook(
        tmp_path / "a.ipynb",
        "from math import *\nimport numpy as np\n%matplotlib inline\n!pip install nothing\nnp.exp?",
        "# is this [b, T, T]?\nTABLE = []\nfor i in range(3):\n    TABLE.append(i)\n"
        "if True:\n    SCALE = sqrt(4)\nwith open(__import__('os').devnull) as f:\n    OPENED = 1\n"
        "try:\n    TRIED = 1\nexcept Exception:\n    pass",
        "%time doubled = [2 * t for t in TABLE]\ndisplay(doubled)\nNAME = __name__",
        "%%capture\nCAPTURED = get_ipython() is not None",
        "def helper():\n    return 5",
        "from __main__ import helper as imported\nFROM_MAIN = imported()",
    )
    run = load_notebook(path)
    ns = run.namespace
    assert ns["TABLE"] == [0, 1, 2] and ns["SCALE"] == 2.0
    assert ns["OPENED"] == 1 and ns["TRIED"] == 1
    assert ns["doubled"] == [0, 2, 4] and ns["NAME"] == "__main__" and ns["CAPTURED"] is True
    assert ns["FROM_MAIN"] == 5
    assert run.notes == []


def test_a_cell_that_raises_is_noted_with_its_line_and_later_cells_still_run(tmp_path) -> None:
    path = notebook(
        tmp_path / "b.ipynb",
        "def good():\n    return 1",
        "x = 1\nbroken = 1 / 0",
        "def bad(:\n    pass",
        "AFTER = good() + 1",
    )
    run = load_notebook(path)
    assert run.namespace["AFTER"] == 2
    assert any(
        n.startswith("code cell 2 (`x = 1`), line 2: raised ZeroDivisionError") for n in run.notes
    )
    assert any(n.startswith("code cell 3") and "SyntaxError" in n for n in run.notes)


def test_a_cell_past_its_time_limit_is_stopped_and_the_next_runs(tmp_path) -> None:
    path = notebook(tmp_path / "c.ipynb", "while True:\n    pass", "AFTER = 3")
    run = load_notebook(path, cell_timeout=0.5)
    assert run.namespace["AFTER"] == 3
    assert any("code cell 1" in n and "time limit" in n for n in run.notes)


def test_check_cells_are_skipped_and_other_cells_are_not(tmp_path) -> None:
    # `lesson` is undefined: running either check cell would raise a NameError.
    path = notebook(
        tmp_path / "d.ipynb",
        "lesson.check(softmax)",
        "# Hidden tests: stability.",
        "lesson.check(softmax)\nX = 1",
    )
    run = load_notebook(path)
    assert [c.is_check_cell for c in read_cells(path)] == [True, True, False]
    assert len(run.notes) == 1 and "NameError" in run.notes[0]


def test_the_definition_live_at_a_graded_cell_is_recorded(tmp_path) -> None:
    from attnkit.notebook_run import run_cells

    path = notebook(
        tmp_path / "e.ipynb",
        "def f():\n    return 'first'",
        "# graded",
        "def f():\n    return 'second'",
        grade_ids={1: "test_f"},
    )
    run = run_cells(read_cells(path), watch=("f",))
    assert run.namespace["f"]() == "second"
    assert run.live_at_cell["test_f"]["f"]() == "first"


def test_an_exercise_is_judged_with_the_helpers_and_aliases_it_read_at_its_cell(tmp_path) -> None:
    """The exercise is not redefined, but its helper, a constant and the module alias it
    reads are rebound further down: the graded cell's variant reads them as they were."""
    from attnkit.notebook_run import run_cells

    path = notebook(
        tmp_path / "e.ipynb",
        "import numpy as np\nSCALE = 2\ndef helper(x):\n    return x * SCALE\n"
        "def f(x):\n    return float(np.sum(helper(x)))",
        "# graded",
        "import math as np\nSCALE = 0\ndef helper(x):\n    return None\nunrelated = 1",
        grade_ids={1: "test_f"},
    )
    run = run_cells(read_cells(path), watch=("f",))
    assert run.variants(("f",)) == ["test_f"]
    with run.as_at("test_f"):
        assert run.namespace["f"]([1, 2]) == 6.0
    assert run.namespace["SCALE"] == 0 and run.namespace["unrelated"] == 1
    # Nothing the exercise reads changed: no variant to grade.
    path = notebook(
        tmp_path / "same.ipynb",
        "def f(x):\n    return x",
        "# graded",
        "unrelated = 1",
        grade_ids={1: "test_f"},
    )
    assert run_cells(read_cells(path), watch=("f",)).variants(("f",)) == []
    # An attribute named like a global the notebook rebinds (self.heads, x.shape) is not a
    # read of that global: no variant, so no regrading of the same definitions.
    path = notebook(
        tmp_path / "attrs.ipynb",
        "class M:\n    def __init__(self, heads):\n        self.heads = heads\n"
        "    def forward(self, x):\n        return self.heads * x.shape[0]\n"
        "heads, shape = [2], (3,)",
        "# graded",
        "heads, shape = [1], (2,)",
        grade_ids={1: "test_m"},
    )
    assert run_cells(read_cells(path), watch=("M",)).variants(("M",)) == []
    # The lesson's later exercises (and a helper defined further down) are not yet bound at
    # an earlier graded cell: that makes no variant, while a rebound helper still does.
    path = notebook(
        tmp_path / "later.ipynb",
        "def f(x):\n    return g(x) + later(x)\ndef later(x):\n    return 0",
        "# graded",
        "def g(x):\n    return x",
        "# graded",
        grade_ids={1: "test_f", 3: "test_g"},
    )
    assert run_cells(read_cells(path), watch=("f", "g")).variants(("f", "g")) == []
    path = notebook(
        tmp_path / "rebound.ipynb",
        "def f(x):\n    return later(x)\ndef later(x):\n    return 0",
        "# graded",
        "def later(x):\n    return 1",
        grade_ids={1: "test_f"},
    )
    assert run_cells(read_cells(path), watch=("f", "g")).variants(("f", "g")) == ["test_f"]


def test_nbformat_3_py_files_and_crlf_are_read(tmp_path) -> None:
    old = notebook(tmp_path / "old.ipynb", "def f():\n    return 3", nbformat=3)
    assert load_notebook(old).namespace["f"]() == 3
    script = tmp_path / "s.py"
    script.write_bytes(b"def g():\r\n    return 4\r\ng()\r\n")
    assert load_notebook(script).namespace["g"]() == 4
    crlf = notebook(tmp_path / "crlf.ipynb", "def h():\r\n    return 5\r\n")
    assert load_notebook(crlf).namespace["h"]() == 5


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b'{"cells": [', "not valid notebook JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b'{"nbformat": 2, "cells": []}', "unsupported nbformat"),
        (b"[1, 2, 3]", "not a notebook"),
        (b"[" * 100_000 + b"]" * 100_000, "nests more than"),
        (b'{"nbformat": 4, "cells": {"a": 1}}', ""),
    ],
)
def test_damaged_files_raise_a_clear_error_or_read_as_empty(tmp_path, content, message) -> None:
    path = tmp_path / "damaged.ipynb"
    path.write_bytes(content)
    if not message:
        assert read_cells(path) == []
        return
    with pytest.raises(NotebookError, match=message) as err:
        read_cells(path)
    assert str(path) in err.value.message


def _depth_by_every_character(text: str) -> int:
    """The nesting walk character by character: what _nesting_depth must agree with."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='[]{}"\\a,: ', max_size=60))
def test_the_nesting_walk_visits_only_what_matters_and_agrees(text: str) -> None:
    assert _nesting_depth(text) == _depth_by_every_character(text)


def test_the_nesting_of_a_real_notebook_and_of_escaped_quotes() -> None:
    notebook = released_path("02_self_attention", ROOT / "assignments").read_text()
    assert _nesting_depth(notebook) == _depth_by_every_character(notebook) > 2
    assert _nesting_depth('["\\\\", ["\\"[[["]]') == 2


def test_a_one_line_cell_is_transformed_in_the_namespace_it_meets() -> None:
    """IPython's transformation of a one-line cell reads the namespace (``time`` a variable,
    or the %time magic): only the static part is kept per text, so the same line is a
    statement while ``time`` is a variable and the magic once it is gone, as in Jupyter."""
    from attnkit.ipython_shell import fresh_namespace, kernel_shell
    from attnkit.notebook_code import Cell
    from attnkit.notebook_run import run_cell

    shell = kernel_shell()
    namespace = fresh_namespace(shell)
    sources = ["time = 0", "time tag = 'magic'", "del time", "time tag = 'magic'"]
    outcomes = [run_cell(shell, Cell(i + 1, source)).status for i, source in enumerate(sources)]
    assert outcomes == ["ok", "error", "ok", "ok"] and namespace["tag"] == "magic"


def test_the_zygotes_warm_up_leaves_no_error_or_value_for_a_notebook() -> None:
    """The warm-up cell runs in a namespace thrown away afterwards: no error for %debug to
    open, no displayed value in ``Out``."""
    import subprocess
    import sys

    def state(warm: bool) -> str:
        probe = (
            "import sys\n"
            "from attnkit import notebook_run\n"
            "from attnkit.student_process.startup import warm_shell\n"
            f"{'warm_shell(notebook_run)' if warm else 'pass'}\n"
            "shell = notebook_run.kernel_shell()\n"
            "namespace = notebook_run.fresh_namespace(shell)\n"
            "print(hasattr(sys, 'last_value'), dict(namespace['Out']), namespace.get('_'),"
            " namespace.get('__'), len(shell.history_manager.output_hist))\n"
        )
        shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        return shown.stdout.strip().splitlines()[-1]

    assert state(warm=True) == state(warm=False) == "False {} None None 0"


def test_the_zygotes_start_up_leaves_every_random_state_as_a_fresh_kernels() -> None:
    """preload runs an attention layer under the recorder (its dropout, its weights drawn):
    afterwards Python's, numpy's and PyTorch's random states are those of a fresh kernel, so
    a notebook's unseeded draws are what they would be in Jupyter, and PyTorch's hook stacks
    are empty. The warm-up did run, for every set of forbidden calls: the recorder's
    verdict caches hold the operations it reached."""
    import subprocess
    import sys

    probe = (
        "import random, numpy, torch, json\n"
        "def states():\n"
        "    return [random.getstate()[1][:5], numpy.random.get_state()[1][:5].tolist(),\n"
        "            torch.random.get_rng_state()[:32].tolist()]\n"
        "before = states()\n"
        "from attnkit.student_process import recorder, startup\n"
        "startup.preload()\n"
        "from attnkit.assignments import ASSIGNMENTS\n"
        "sets = {tuple(sorted(e.forbidden)) for a in ASSIGNMENTS.values() for e in a.exercises}\n"
        "warmed = [len(recorder._watched(s).verdicts) for s in sorted(sets) if s]\n"
        "stacks = [torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack()]\n"
        "print(json.dumps([before == states(), warmed, stacks]))\n"
    )
    shown = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "MPLBACKEND": "Agg"},
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    same, warmed, stacks = __import__("json").loads(shown.stdout.strip().splitlines()[-1])
    assert same is True
    # Every set of calls the lessons forbid: the attention's operations, each judged once,
    # before any fork; and no hook of the warm-up's recorders is left on PyTorch's stacks.
    assert len(warmed) >= 2 and min(warmed) > 20
    assert stacks == [0, 0]
