"""The scan's notes need evidence: honest idioms get none, every way of naming the grader's
machinery gets one, and a cell the scan cannot read while IPython ran it is itself noted."""

from __future__ import annotations

import pytest

from attnkit.notebook_code import Cell
from attnkit.notebook_run import CellOutcome
from attnkit_autograder.grading.explain import static_notes
from attnkit_autograder.grading.scan import python_text, tampering

HONEST = {
    "a dtype named at run time": "import torch\nbits = 32\ndt = getattr(torch, f'float{bits}')",
    "asking whether a module is loaded": "import sys\ncolab = sys.modules.get('google.colab')",
    "a layer's class by its full name": "import torch\nkind = torch.nn.modules.linear.Linear",
    "importing from torch.nn.modules": "from torch.nn.modules.activation import ReLU",
    "a message naming the lesson helper": "print('see attnkit.notebook for the helper')",
    "a module's own modules()": "import torch\nlayers = list(torch.nn.Linear(2, 2).modules())",
    "eval mode, compiled patterns": "import re\nmodel.eval()\nword = re.compile('[a-z]+')",
}
REACHES = {
    "a frame walked by attrgetter": (
        "import operator, sys\nf = operator.attrgetter('tb_frame')(sys.exc_info()[2])",
        "names 'tb_frame' in a string",
    ),
    "a frame name built from pieces": ("x = 'f_' + 'back'", "names 'f_back' in a string"),
    "importlib reached by a computed name": (
        "import importlib\nload = getattr(importlib, 'import_' + 'module')",
        "a module's attribute named at run time (getattr(importlib, ...))",
    ),
    "a kit module named in pieces": (
        "name = 'attn' + 'kit.implementation'",
        "names the kit's module 'attnkit.implementation' in a string",
    ),
    "sys.modules under another name": ("import sys as s\nm = s.modules['x']", "sys.modules"),
    "vars of the interpreter's modules": ("import builtins\nv = vars(builtins)", "vars(builtins"),
    "exec as an attribute of builtins": (
        "import builtins, base64\nbuiltins.exec(base64.b64decode(b'eD0x'))",
        "calls exec()",
    ),
    "exec through getattr": ("getattr(__builtins__, 'exec')('x = 1')", "calls exec()"),
    "eval from __builtins__": ("__builtins__['eval']('1')", "calls eval()"),
    "exec under another name": ("run = exec\nrun('x = 1')", "reaches exec() without calling"),
}


@pytest.mark.parametrize("idiom", sorted(HONEST))
def test_an_honest_idiom_gets_no_note(idiom: str) -> None:
    assert tampering([(1, HONEST[idiom])]) == []


@pytest.mark.parametrize("reach", sorted(REACHES))
def test_every_way_to_name_the_machinery_is_noted(reach: str) -> None:
    source, words = REACHES[reach]
    assert any(words in finding.what for finding in tampering([(1, source)])), reach


def test_the_scan_reads_a_cell_as_ipython_cleans_it() -> None:
    assert python_text(" import sys\n x = sys._getframe(0)") == "import sys\nx = sys._getframe(0)"
    assert python_text(">>> a = 1\n... b = a\n>>> c = b") == "a = 1\nb = a\nc = b"
    assert python_text("In [3]: y = 2") == "y = 2"


def test_a_cell_that_ran_but_cannot_be_read_is_noted() -> None:
    unreadable = Cell(2, "def f(:\n    pass\n")
    ran = static_notes("02_self_attention", [unreadable], {})
    assert any("code cell 2 ran, but the scan" in note for note in ran)
    raised = {2: CellOutcome(2, "error", "SyntaxError", "invalid syntax", 1)}
    assert not any(
        "the scan" in note for note in static_notes("02_self_attention", [unreadable], raised)
    )
