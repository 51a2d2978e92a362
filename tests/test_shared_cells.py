"""Released cells computed once per sandbox: shared only when nothing the student wrote can
change their results, and handed over only while everything they read is unchanged."""

from __future__ import annotations

import builtins
import copy
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from attnkit.student_process.shared_cells import cell_reads, compute, hand_over, value_bytes
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings, grade_submission
from attnkit_autograder.grading.shared_cells import imported_modules, shareable_cells
from attnkit_autograder.grading.submission import Submission

ROOT = Path(__file__).resolve().parents[1]
TORCH = {"torch": "torch", "nn": "torch.nn"}
SEEDED = "torch.manual_seed(7)\ntable = nn.Embedding(50, 4)\nx = table(torch.arange(3))\n"


def test_what_a_cell_reads_is_read_statement_by_statement() -> None:
    reads = cell_reads("import math\nx = torch.ones(2)\ny = x + math.pi\nprint(len(y), nn.Linear)")
    assert reads is not None
    assert reads.free == {"torch", "print", "len", "nn"}
    assert reads.attributes == {("torch", "ones"), ("nn", "Linear")}
    assert reads.imports == {("math", None)}
    # Read before it is bound: free, whatever the cell binds later.
    assert cell_reads("y = x + 1\nx = 2").free == {"x"}  # type: ignore[union-attr]
    # Code that runs later, or in a scope of its own, or IPython syntax: never shared.
    for source in ("f = lambda v: v", "[v for v in range(3)]", "def f(): pass", "%time x = 1"):
        assert cell_reads(source) is None


def test_the_lessons_shareable_cells_read_only_the_setups_modules() -> None:
    assert imported_modules("import torch\nfrom torch import nn\nimport numpy as np") == {
        "torch": "torch",
        "nn": "torch.nn",
        "np": "numpy",
    }
    lesson2 = shareable_cells("02_self_attention")
    sources = [c["source"] for c in lesson2]
    assert any("nn.Embedding(50257, 256)" in s for s in sources)
    # No cell that calls an exercise, or that the student writes, is shareable.
    for slug in ("01_numpy_attention", "02_self_attention", "03_causal_attention"):
        for cell in shareable_cells(slug):
            assert "lesson" not in cell_reads(cell["source"]).free  # type: ignore[union-attr]
            assert "NotImplementedError" not in cell["source"]


def test_a_seeded_cell_is_computed_once_and_reproduces_a_fresh_run() -> None:
    shared = compute(SEEDED, TORCH)
    assert shared is not None and set(shared.bindings) == {"table", "x"}
    assert list(shared.seeded) == ["torch"]
    fresh = {"torch": torch, "nn": torch.nn}
    exec(SEEDED, fresh)
    assert value_bytes(shared.bindings["x"]) == value_bytes(fresh["x"])
    assert shared.bindings["x"].grad_fn is not None  # the autograd graph is kept, not copied


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("x = torch.rand(3)", "draws from the random state it found"),
        ("x = np.random.normal(size=2)", "draws from NumPy's global state"),
        ("torch.set_default_dtype(torch.float64)\nx = 1", "changes a global default"),
        ("x = undefined_name + 1", "raises"),
        ("f = open('written.txt', 'w')\nf.write('x')\nf.close()", "writes a file"),
    ],
)
def test_a_cell_whose_results_depend_on_more_than_its_code_is_not_shared(
    tmp_path, monkeypatch, source, why
) -> None:
    monkeypatch.chdir(tmp_path)
    state = torch.get_rng_state()
    shared = compute(source, {**TORCH, "np": "numpy"}, scratch=(str(tmp_path),))
    assert shared is None, why
    torch.set_default_dtype(torch.float32)
    assert torch.equal(torch.get_rng_state(), state)  # the computing process is left as it was


def test_computing_leaves_every_random_state_as_it_was() -> None:
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    before = (random.random(), np.random.rand(), torch.rand(1).item())
    random.seed(5)
    np.random.seed(5)
    torch.manual_seed(5)
    assert compute(SEEDED, TORCH) is not None
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == before


def pristine() -> dict:
    return {"torch": torch, "nn": torch.nn, "__builtins__": builtins}


def test_hand_over_binds_the_results_and_seeds_as_the_cell_would() -> None:
    shared = compute(SEEDED, TORCH)
    namespace = pristine()
    np.random.seed(11)
    numpy_state = value_bytes(np.random.get_state())
    torch.manual_seed(99)
    assert hand_over(shared, namespace)
    assert namespace["x"] is shared.bindings["x"]
    handed_over = torch.get_rng_state()
    exec(SEEDED, pristine())  # the cell itself, run here
    assert torch.equal(handed_over, torch.get_rng_state())
    assert value_bytes(np.random.get_state()) == numpy_state  # a generator it did not seed


class Patched:
    """What a student's earlier cell might have done to what the shared cell reads."""

    @staticmethod
    def rebound_name(namespace: dict) -> None:
        namespace["nn"] = torch  # `nn = torch` in a cell above

    @staticmethod
    def shadowed_builtin(namespace: dict) -> None:
        namespace["print"] = lambda *a: None

    @staticmethod
    def patched_function(namespace: dict) -> None:
        torch.nn.Embedding = type("Embedding", (torch.nn.Embedding,), {})

    @staticmethod
    def default_dtype(namespace: dict) -> None:
        torch.set_default_dtype(torch.float64)


@pytest.mark.parametrize("patch", ["rebound_name", "shadowed_builtin", "patched_function",
                                   "default_dtype"])  # fmt: skip
def test_hand_over_refuses_when_anything_the_cell_reads_changed(patch) -> None:
    shared = compute(SEEDED + "print(x)", TORCH)
    assert shared is not None
    original = torch.nn.Embedding
    namespace = pristine()
    try:
        getattr(Patched, patch)(namespace)
        before = dict(namespace)
        assert not hand_over(shared, namespace)
        assert namespace == before
    finally:
        torch.nn.Embedding = original
        torch.set_default_dtype(torch.float32)


# -- in the sandbox ---------------------------------------------------------------------------


SLUG = "02_self_attention"


def graded(tmp_path: Path, name: str, notebook: dict) -> dict:
    path = write_notebook(notebook, tmp_path / f"{name}_{SLUG}.ipynb")
    return grade_submission(
        Submission(name, SLUG, path), GradeSettings(GradeOptions(cell_timeout=20))
    )


def data_cell(notebook: dict) -> int:
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    return next(i + 1 for i, c in enumerate(code) if "nn.Embedding(50257" in "".join(c["source"]))


@pytest.mark.slow
def test_the_sandbox_shares_the_data_cell_only_when_nothing_changed_what_it_reads(
    tmp_path,
) -> None:
    correct = fill_notebook(released_notebook(SLUG, ROOT / "assignments"), SLUG)
    index = data_cell(correct)
    record = graded(tmp_path, "ann", correct)
    assert record["score"] == record["max_score"]
    assert index in record["run"]["shared_cells"]["cells"]
    assert not record["notes"]

    # A cell above it replaces nn.Embedding: in Jupyter the data cell then fails, and so
    # it does here, because it is run rather than handed over.
    patched = copy.deepcopy(correct)
    replacing = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    cells = patched["cells"]  # the new cell goes right after the setup cell's imports
    setup = next(
        i
        for i, c in enumerate(cells)
        if c["metadata"].get("nbgrader", {}).get("grade_id") == "setup"
    )
    patched["cells"].insert(setup + 1, {**replacing, "source": "nn.Embedding = None\n"})
    record = graded(tmp_path, "bob", patched)
    assert index + 1 not in record["run"].get("shared_cells", {}).get("cells", [])
    assert any("raised TypeError" in note for note in record["notes"]), record["notes"]

    # An edited data cell is the student's own: run as written.
    edited = copy.deepcopy(correct)
    for cell in edited["cells"]:
        if "nn.Embedding(50257" in "".join(cell["source"]):
            cell["source"] = "".join(cell["source"]).replace("manual_seed(123)", "manual_seed(5)")
    record = graded(tmp_path, "cy", edited)
    assert index not in record["run"].get("shared_cells", {}).get("cells", [])
    assert record["score"] == record["max_score"]
