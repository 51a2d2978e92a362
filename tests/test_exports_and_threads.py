"""A notebook exported as Python runs cell by cell, as in Jupyter; a cell with a statement
stopped at its time limit, that left a thread behind, still makes every definition it makes
in Jupyter, and costs no exercise."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnkit.notebook_code import python_cells
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings, grade_submission
from attnkit_autograder.grading.submission import Submission

ROOT = Path(__file__).resolve().parents[1]

EXPORTED = """#!/usr/bin/env python
# coding: utf-8

# # Lesson 2

# In[1]:


import torch


# In[ ]:


lesson.check(softmax)

# %%
x = 1
"""


def test_an_exported_notebook_is_cut_at_its_cell_markers() -> None:
    cells = python_cells(EXPORTED)
    assert [c.source for c in cells][1:] == ["import torch", "lesson.check(softmax)", "x = 1"]
    assert [c.is_check_cell for c in cells] == [True, False, True, False]
    assert [c.index for c in cells] == [1, 2, 3, 4]
    assert [c.source for c in python_cells("y = 2\nprint(y)\n")] == ["y = 2\nprint(y)"]


LINGERING_LOOP = """
import threading, time
threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
before_the_loop = 1
while True:
    pass
def softmax(x, dim=-1):
    shift = x.amax(dim=dim, keepdim=True)
    shift = torch.where(torch.isfinite(shift), shift, torch.zeros_like(shift))
    exps = (x - shift).exp()
    total = exps.sum(dim=dim, keepdim=True)
    return exps / torch.where(total == 0, torch.ones_like(total), total)
"""


@pytest.mark.slow
def test_a_stopped_cell_that_left_a_thread_costs_no_exercise(tmp_path: Path) -> None:
    slug = "02_self_attention"
    # The softmax is defined after the loop, in the same cell, and only there: the stub
    # in its own cell raises NotImplementedError.
    notebook = fill_notebook(released_notebook(slug, ROOT / "assignments"), slug, {"softmax": None})
    notebook["cells"].append(
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": LINGERING_LOOP}
    )
    path = write_notebook(notebook, tmp_path / f"ann_{slug}.ipynb")
    record = grade_submission(
        Submission("ann", slug, path), GradeSettings(GradeOptions(cell_timeout=3))
    )
    assert record["score"] == record["max_score"], [t["message"] for t in record["tests"]]
    assert any("stopped at the cell's 3 s time limit" in n for n in record["notes"])
    assert any("left a thread running" in n for n in record["notes"])
