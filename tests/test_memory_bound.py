"""Lesson 7's memory bound, in the real sandbox: decided outside the student's process.

The bound is the worker's hard address-space limit (``MEMORY_MB`` of the lesson's folder),
set before any notebook code runs; the memory test calls ``flash_attention`` where one head's
score matrix alone exceeds it. So an answer that builds the score matrix loses exactly that
test, named "built the whole score matrix", whatever it does to the kit's in-process memory
watch and recorder; and every honest answer of the fairness corpus, at any block size the
docstring allows, passes with room to spare. Each result records the peak the zygote measured
from outside.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from attnkit.notebook_code import read_cells
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.classes.discovery import discover
from attnkit_autograder.classes.results import result_paths
from attnkit_autograder.classes.supervisor import grade_all
from attnkit_autograder.grading.catalogue import mistakes_for
from attnkit_autograder.grading.options import GradeOptions
from attnkit_autograder.grading.pipeline import GradeSettings
from attnkit_autograder.lessons.l07_flash_attention import MEMORY_MB, MEMORY_SHAPE
from attnkit_autograder.lessons.rubric import load_rubric
from attnkit_autograder.sandbox.isolation import IsolatedSubmission, Limits
from attnkit_autograder.sandbox.zygote import discard_zygote
from attnkit_solutions.flash_attention import flash_attention

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "fair"
SLUG = "07_flash_attention"
LIMIT = MEMORY_MB * 2**20
ROOM = 0.75
"""An honest answer's peak stays below this share of the limit."""
pytestmark = pytest.mark.slow

SILENCED = """
import attnkit.tensor_memory as watch_module

# The kit's memory watch runs in this process: switch it off.
watch_module.MemoryWatch.__enter__ = lambda self: self
watch_module.MemoryWatch.__exit__ = lambda self, *exc: None
"""
HIDDEN = """
with torch._C._DisableTorchDispatch():  # no dispatch mode sees this: the recorder's neither
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
n_q, n_k = q.shape[-2], k.shape[-2]
if causal:
    future = torch.ones(n_q, n_k, dtype=torch.bool).triu(n_k - n_q + 1)
    scores = scores.masked_fill(future, -math.inf)
lse = torch.logsumexp(scores, dim=-1)
return torch.exp(scores - lse[..., None]).nan_to_num(0.0) @ v, lse
"""
PER_HEAD = """
n_q, n_k = q.shape[-2], k.shape[-2]
future = torch.arange(n_k)[None, :] > torch.arange(n_q)[:, None] + n_k - n_q
outs, lses = [], []
for qh, kh, vh in zip(q.reshape(-1, n_q, q.shape[-1]), k.reshape(-1, n_k, k.shape[-1]),
                      v.reshape(-1, n_k, v.shape[-1])):  # one head's T x T at a time
    s = qh @ kh.T / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(future, -math.inf)
    l = torch.logsumexp(s, dim=-1)
    outs.append(torch.exp(s - l[:, None]).nan_to_num(0.0) @ vh)
    lses.append(l)
return (torch.stack(outs).reshape(*q.shape[:-1], v.shape[-1]),
        torch.stack(lses).reshape(q.shape[:-1]))
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """The reference, the catalogue's materialising answer, one that switches off the memory
    watch and hides its matrix from every dispatch mode, and one that builds the matrix head
    by head: graded once by the grader, in the sandbox."""
    tmp = tmp_path_factory.mktemp("bound")
    released = released_notebook(SLUG, ROOT / "assignments")
    whole = next(m for m in mistakes_for(SLUG, "flash_attention") if m.id == "materialised")
    silenced = fill_notebook(released, SLUG, {"flash_attention": HIDDEN})
    cells = silenced["cells"]
    at = next(i for i, c in enumerate(cells) if "Lesson(" in "".join(c["source"])) + 1
    source = SILENCED.strip().splitlines(keepends=True)
    cells.insert(at, {"cell_type": "code", "execution_count": None, "id": "5113ced0",
                      "metadata": {}, "outputs": [], "source": source})  # fmt: skip
    notebooks = {
        "ann": fill_notebook(released, SLUG),
        "bob": fill_notebook(released, SLUG, {"flash_attention": whole.code}),
        "cat": silenced,
        "dan": fill_notebook(released, SLUG, {"flash_attention": PER_HEAD}),
    }
    for student, notebook in notebooks.items():
        write_notebook(notebook, tmp / "subs" / f"{student}_{SLUG}.ipynb")
    grade_all(discover(tmp / "subs"), tmp / "out", GradeSettings(GradeOptions()), jobs=2)
    results = [json.loads(path.read_text()) for path in result_paths(tmp / "out")]
    return {r["student"]: r for r in results}


def test_the_reference_gets_full_marks_with_room_to_spare(graded: dict[str, dict]) -> None:
    for student, record in sorted(graded.items()):
        memory = {k: f"{v / 2**20:.1f} MiB" for k, v in record["run"]["memory"].items()}
        print(f"\n{student}: {record['score']}/{record['max_score']}, memory {memory}")
    record = graded["ann"]
    assert record["score"] == record["max_score"], record["tests"]
    memory = record["run"]["memory"]
    assert memory["limit_bytes"] == LIMIT
    assert 0 < memory["peak_bytes"] <= ROOM * LIMIT, memory
    assert memory["peak_rss_bytes"] > memory["peak_bytes"]  # PyTorch's own pages count there


@pytest.mark.parametrize("student", ["bob", "cat", "dan"])
def test_a_score_matrix_loses_exactly_the_memory_test_named(graded, student: str) -> None:
    record = graded[student]
    lost = [t for t in record["tests"] if t["status"] != "passed"]
    assert [t["grade_id"] for t in lost] == ["test_flash_memory"], [t["message"] for t in lost]
    assert record["score"] == record["max_score"] - load_rubric(SLUG)["test_flash_memory"]
    (test,) = lost
    assert "ran out of memory at T = 4096" in test["message"]
    assert test["diagnosis"] is not None and test["diagnosis"]["id"] == "materialised"
    assert test["diagnosis"]["title"] == "built the whole score matrix"
    assert record["run"]["memory"]["peak_bytes"] <= record["run"]["memory"]["limit_bytes"]


def test_switching_the_watch_off_changes_nothing_but_the_detail(graded) -> None:
    watched, silenced = (graded[s]["tests"] for s in ("bob", "cat"))
    memory = {s: next(t for t in graded[s]["tests"] if t["grade_id"] == "test_flash_memory")
              for s in ("bob", "cat")}  # fmt: skip
    assert "could not allocate memory (code cell" in memory["bob"]["message"]  # the watch's
    assert "can't allocate memory" in memory["cat"]["message"]  # PyTorch's allocator's alone
    assert [t["points"] for t in watched] == [t["points"] for t in silenced]


# -- every honest answer, at any block size the docstring allows ------------------------------

BLOCKS = [(512, 512), (512, 64), (64, 512), (100, 300), (64, 64)]
STYLES = ["reference", "ada_numpy_inside", "dee_keys_outer", "fay_log_domain"]


def notebook_cells(style: str, folder: Path) -> list:
    if style == "reference":
        released = released_notebook(SLUG, ROOT / "assignments")
        path = write_notebook(fill_notebook(released, SLUG), folder / f"{SLUG}.ipynb")
    else:
        sys.path.insert(0, str(CORPUS))
        import builder

        path = builder.build(CORPUS / SLUG / f"{style}.py").write(folder)
    return read_cells(path, path.read_bytes())


@pytest.mark.parametrize("style", STYLES)
def test_honest_answers_fit_at_every_block_size(style: str, tmp_path: Path) -> None:
    limits = Limits(call_timeout=60.0, cell_timeout=30.0, budget=600.0, memory_bytes=LIMIT)
    impl = IsolatedSubmission(notebook_cells(style, tmp_path), limits, withhold="softmax")
    generator = np.random.default_rng(7)
    q, k, v = (generator.normal(size=MEMORY_SHAPE).astype(np.float32) for _ in range(3))
    try:
        for block_q, block_k in BLOCKS:
            got = impl.run(
                "call_function", name="flash_attention", args=[q, k, v, block_q, block_k, True],
                framework="torch", forbidden=("torch.softmax",),
            )  # fmt: skip
            out = got["out"]["items"][0]["array"]
            want = flash_attention(*(torch_of(a) for a in (q, k, v)), 512, 512, True)[0]
            np.testing.assert_allclose(out, want.numpy(), atol=1e-5, rtol=1e-5)
    finally:
        impl.close()
        discard_zygote()
    memory = impl.memory()
    print(f"\n{style}: peak {memory['peak_bytes'] / 2**20:.1f} MiB of {MEMORY_MB} MiB")
    assert 0 < memory["peak_bytes"] <= ROOM * LIMIT, textwrap.shorten(str(memory), 200)


def torch_of(array: np.ndarray):  # type: ignore[no-untyped-def]
    import torch

    return torch.from_numpy(array)
