"""Reading submissions: only definitions run, and damaged files give clear messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attnkit.notebook_code import (
    NotebookError,
    extract_definitions,
    load_definitions,
    read_code_cells,
)


def notebook(path: Path, *sources: str, nbformat: int = 4) -> Path:
    if nbformat == 4:
        cells = [{"cell_type": "code", "source": s, "metadata": {}, "outputs": []} for s in sources]
        data = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}
    else:
        cells = [{"cell_type": "code", "input": s, "outputs": []} for s in sources]
        data = {"nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": cells}]}
    path.write_text(json.dumps(data))
    return path


def test_only_definitions_run_and_a_crashing_demo_does_not_matter(tmp_path) -> None:
    path = notebook(
        tmp_path / "a.ipynb",
        "import math\n%matplotlib inline\n!pip install nothing",
        "def double(x):\n    return 2 * x\nprint(double(2))\nraise RuntimeError('demo crashed')",
        "SCALE = math.sqrt(4)\nfor i in range(10**12):\n    pass",
        "@staticmethod\ndef decorated():\n    return 1",
        "broken = 1 / 0",
    )
    namespace, definitions, notes = load_definitions(path)
    assert namespace["double"](3) == 6 and namespace["SCALE"] == 2.0
    assert "decorated" in namespace
    assert any("ZeroDivisionError" in n and "broken" in n for n in notes)
    assert "double" in definitions.source_of("double")


def test_cells_with_syntax_errors_are_skipped_with_a_note(tmp_path) -> None:
    path = notebook(tmp_path / "b.ipynb", "def good():\n    return 1", "def bad(:\n    pass")
    namespace, _, notes = load_definitions(path)
    assert namespace["good"]() == 1
    assert any("code cell 2 has a syntax error" in n for n in notes)


def test_nbformat_3_and_py_files_are_read(tmp_path) -> None:
    old = notebook(tmp_path / "old.ipynb", "def f():\n    return 3", nbformat=3)
    assert load_definitions(old)[0]["f"]() == 3
    script = tmp_path / "s.py"
    script.write_text("def g():\n    return 4\ng()\n")
    assert load_definitions(script)[0]["g"]() == 4


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b'{"cells": [', "not valid notebook JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b'{"nbformat": 2, "cells": []}', "unsupported nbformat"),
        (b"[1, 2, 3]", "not a notebook"),
    ],
)
def test_damaged_files_raise_a_clear_error(tmp_path, content: bytes, message: str) -> None:
    path = tmp_path / "damaged.ipynb"
    path.write_bytes(content)
    with pytest.raises(NotebookError, match=message) as err:
        read_code_cells(path)
    assert str(path) in err.value.message


def test_extract_keeps_definition_kinds_only() -> None:
    definitions = extract_definitions(
        ["x = 1\nprint(x)\nclass A:\n    pass\nwith open('f'):\n    pass"]
    )
    assert [s.names for s in definitions.statements] == [("x",), ("A",)]


def test_only_what_the_exercises_need_is_kept() -> None:
    definitions = extract_definitions(
        [
            "import numpy as np\nimport matplotlib.pyplot as plt\nimport math",
            "EPS = 1e-9\nSCALE = math.sqrt(2)\ndemo = np.ones(10**8)",
            "def helper(x):\n    return x * SCALE\n"
            "def softmax(x, axis=-1):\n    return np.exp(helper(x)) + EPS",
            "plt.plot([1, 2])\nfigure = plt.figure()",
        ]
    )
    kept = definitions.needed_for({"softmax"})
    names = {n for s in kept.statements for n in s.names}
    assert names == {"np", "math", "EPS", "SCALE", "helper", "softmax"}
    assert definitions.needed_for({"missing"}).statements == []
