"""Library softmax and attention reached around the withheld kernels: each attack in
tests/corpus/withheld (written against the kit with its code in hand) must cost the exercises
it cheats on, and each honest notebook there (``honest_*``) must keep every point, graded by
``attnkit grade`` as a course would.

The attacks: PyTorch's native CPU softmax run by Static Runtime, by a compiled extension
the notebook writes and imports, through cffi, and by NNC; the Python decomposition and
reference softmax (torch._decomp, torch._refs); torch.ao's quantizable MultiheadAttention used
as a scaled dot-product attention and as a multi-head attention; torch.onnx's reference
attention, a module loaded only by the notebook. The corpus's files are specs in
the fairness corpus's format (tests/corpus/fair/builder.py).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "corpus" / "fair"))

import builder  # noqa: E402

SOFTMAX = {"test_softmax_values", "test_softmax_stability"}
ATTACKED = {
    "static_runtime_softmax": SOFTMAX,
    "nnc_softmax": SOFTMAX,
    "decomp_softmax": SOFTMAX,
    "refs_softmax": SOFTMAX,
    "native_softmax": SOFTMAX,
    "cffi_softmax": SOFTMAX,
    "onnx_attention": {"test_sdpa_values", "test_sdpa_masking", "test_causal_attention"},
    "onnx_mha": {"test_mha_values", "test_mha_heads"},
    "ao_sdpa": {"test_sdpa_values", "test_sdpa_masking", "test_causal_attention"},
    "ao_mha": {"test_mha_values", "test_mha_heads"},
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    work = tmp_path_factory.mktemp("withheld")
    corpus = ROOT / "tests" / "corpus" / "withheld"
    for path in sorted(corpus.glob("*/*.py")):
        builder.build(path).write(work / "in")  # a folder per student, as handed in
    for path in sorted(corpus.glob("*/*.ipynb")):  # whole notebooks, as they were handed in
        (work / "in" / path.stem).mkdir(parents=True)
        shutil.copyfile(path, work / "in" / path.stem / f"{path.parent.name}.ipynb")
    command = [sys.executable, "-m", "attnkit", "grade", str(work / "in"), "--out"]
    subprocess.run([*command, str(work / "out")], check=True, capture_output=True, timeout=600)
    records = {}
    for record in json.loads((work / "out" / "grades.json").read_text())["submissions"]:
        records[record["student"]] = record
    for path in (work / "out" / "results").glob("*/*.json"):  # each result's run, too
        result = json.loads(path.read_text())
        records[result["student"]]["run"] = result["run"]
    return records


HONEST = (
    "honest_ulla_compares_first",
    "honest_wren_scratch_helper_above",
    "honest_ivo_tries_sdpa_first",
    "honest_jit_scripted_attention",
    "honest_optim_and_assert_close",
    "honest_quinn_library_softmax_for_batches",
    "honest_zoe_own_softmax_everywhere",
    "honest_vera_debug_left_in_a_cell",
)
"""Correct notebooks that call the library where Jupyter would run it: a comparison above
one's own definition, a scratch cell before a helper, a try-out in the exercise's cell, a
TorchScript-compiled module, an optimiser and torch.testing (first imported by the
notebook), an attention layer that takes the library's softmax (allowed there) only for the
hidden tests' small batches, behind a try whose placeholder would lose points, and one that
never calls the library's softmax (graded by one worker), and a ``%debug`` line left in an
exercise's cell (nothing to debug: the sandbox's warm-up leaves no error behind)."""


def test_a_worker_lends_its_answers_only_while_they_are_what_jupyter_would_give(
    graded: dict[str, dict],
) -> None:
    """Lesson 2's attention exercises may use a library softmax; its softmax may not. Their
    answers come from the worker without a softmax while its cells reached no withheld
    kernel and the call needs none: one run of the cells. Otherwise from a worker of their
    own, so the answer is Jupyter's: the cells' comparison with the library (Ulla), or an
    attention call that needs the softmax, which ends the lent call before the notebook's
    own try can catch the error (Quinn's placeholder would cost test_v1_batched)."""
    workers = {student: graded[student]["run"]["workers_started"] for student in graded}
    assert workers["honest_wren_scratch_helper_above"] == 2  # her scratch cell's softmax
    assert workers["honest_ulla_compares_first"] == 2
    assert workers["honest_quinn_library_softmax_for_batches"] == 2
    assert workers["honest_zoe_own_softmax_everywhere"] == 1


def test_every_attack_was_graded(graded: dict[str, dict]) -> None:
    assert sorted(graded) == sorted([*ATTACKED, *HONEST])


@pytest.mark.parametrize("student", HONEST)
def test_an_honest_comparison_with_the_library_costs_nothing(
    graded: dict[str, dict], student: str
) -> None:
    record = graded[student]
    lost = [(t["grade_id"], t["message"]) for t in record["tests"] if t["status"] != "passed"]
    assert lost == [] and record["score"] == record["max_score"]


@pytest.mark.parametrize("attack", sorted(ATTACKED))
def test_an_exercise_computed_by_library_code_gets_none_of_its_points(
    graded: dict[str, dict], attack: str
) -> None:
    tests = {t["grade_id"]: t for t in graded[attack]["tests"]}
    kept = {g: (tests[g]["status"], tests[g]["message"]) for g in ATTACKED[attack]
            if tests[g]["points"] > 0 or tests[g]["status"] == "passed"}  # fmt: skip
    assert kept == {}
    assert all(tests[g]["status"] in ("forbidden", "error") for g in ATTACKED[attack])


def test_slow_cells_run_by_a_second_worker_cost_no_points(tmp_path: Path) -> None:
    """Lesson 2 runs its cells in two workers (one without the softmax, one without fused
    attention): the second's run of a slow experiment is not charged to the hidden tests,
    as the first's is not."""
    spec = ROOT / "tests" / "corpus" / "fair" / "02_self_attention" / "kofi_matmul.py"
    notebook = builder.build(spec).notebook
    notebook["cells"].append(  # a comparison with the library: the second worker is needed
        {"cell_type": "code", "execution_count": None, "id": "compare", "metadata": {},
         "outputs": [], "source": "print(torch.softmax(torch.zeros(3), 0))\n"}
    )  # fmt: skip
    for _ in range(2):
        notebook["cells"].append(
            {"cell_type": "code", "execution_count": None, "id": f"slow{_}", "metadata": {},
             "outputs": [], "source": "import time\ntime.sleep(2)  # a slow experiment\n"}
        )  # fmt: skip
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "ada.ipynb").write_text(json.dumps(notebook))
    command = [sys.executable, "-m", "attnkit", "grade", str(tmp_path / "in"), "--out"]
    command += [str(tmp_path / "out"), "--assignment", "02_self_attention"]
    command += ["--budget", "4", "--cell-timeout", "3"]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    (record,) = json.loads((tmp_path / "out" / "grades.json").read_text())["submissions"]
    lost = [(t["grade_id"], t["message"]) for t in record["tests"] if t["status"] != "passed"]
    assert lost == [] and record["score"] == record["max_score"]
    (result,) = (tmp_path / "out" / "results").glob("*/*.json")
    assert json.loads(result.read_text())["run"]["workers_started"] == 2
