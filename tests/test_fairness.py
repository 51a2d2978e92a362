"""The fairness corpus: correct submissions, written the many ways students write them.

Every submission in ``tests/corpus/fair/<lesson>/`` is correct, and that is proved here
independently of the grader: its code cells run in order in an IPython shell (as
Jupyter's "Run All" runs them) and the resulting namespace passes every hidden test
against the references. A grader that takes points from any of them is unfair, so
``attnkit grade`` and the Gradescope path must give each one full marks.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "corpus" / "fair"
sys.path.insert(0, str(CORPUS))

import builder  # noqa: E402
import runner  # noqa: E402

from attnkit.assignments import ASSIGNMENTS  # noqa: E402
from attnkit_autograder.authoring.corpus import fill_notebook, reference_body  # noqa: E402
from attnkit_autograder.grading.catalogue import load_mistakes  # noqa: E402

FILES = builder.corpus_files()
MIN_PER_LESSON = 8


def by_name(path: Path) -> str:
    return f"{path.parent.name[:2]}/{path.stem}"


@pytest.fixture(scope="module")
def corpus() -> list[builder.Built]:
    return builder.build_all()


# -- the corpus itself (fast) -----------------------------------------------------------------


def test_every_lesson_has_enough_submissions(corpus: list[builder.Built]) -> None:
    per_lesson = {slug: sum(b.lesson == slug for b in corpus) for slug in ASSIGNMENTS}
    assert all(count >= MIN_PER_LESSON for count in per_lesson.values()), per_lesson
    assert len(corpus) >= 40
    assert len({b.student for b in corpus}) == len(corpus), "one student per submission"


def test_no_correct_submission_gets_a_note_from_the_scan(corpus: list[builder.Built]) -> None:
    """Notes that call code "reaching into the grader" need evidence: none of these honest
    notebooks (Colab checks, helper modules, their own private attributes) gets one."""
    from attnkit_autograder.grading.scan import tampering

    noted = {
        f"{b.lesson}/{b.name}": [f.what for f in found]
        for b in corpus
        if (found := tampering(enumerate(b.code_cells())))
    }
    assert noted == {}


def test_every_pattern_is_covered_and_every_claim_holds(corpus: list[builder.Built]) -> None:
    claimed = {tag for b in corpus for tag in b.patterns}
    assert claimed == set(builder.PATTERNS), set(builder.PATTERNS) - claimed
    false_claims = [
        f"{b.lesson}/{b.name}: {tag}"
        for b in corpus
        for tag in b.patterns
        if not builder.PATTERNS[tag](b)
    ]
    assert not false_claims


def test_pattern_checks_can_fail(corpus: list[builder.Built]) -> None:
    # The released notebook, saved unchanged, shows none of the student patterns.
    plain = corpus[0]
    untouched = builder.Built(
        plain.lesson,
        "untouched",
        "",
        (),
        f"{plain.lesson}.ipynb",
        "jupyter",
        plain.released,
        plain.released,
    )
    assert [tag for tag, holds in builder.PATTERNS.items() if holds(untouched)] == []


def test_no_submission_copies_a_reference_answer(corpus: list[builder.Built]) -> None:
    copied = []
    for built in corpus:
        code = "\n".join(" ".join(s.split()) for s in built.code_cells())
        for exercise in ASSIGNMENTS[built.lesson].exercises:
            if exercise.name in built.filled:
                continue  # the file does not mention it: the builder answers it
            reference = reference_body(built.lesson, exercise.name)
            if is_a_bare_answer(reference):
                continue  # `return 1` can only be written one way
            if " ".join(reference.split()) in code:
                copied.append(f"{built.lesson}/{built.name}: {exercise.name}")
    assert not copied


def is_a_bare_answer(body: str) -> bool:
    statements = ast.parse(body).body
    return (
        len(statements) == 1
        and isinstance(statements[0], ast.Return)
        and isinstance(statements[0].value, ast.Constant)
    )


def test_a_corpus_file_that_does_not_apply_names_itself(tmp_path: Path) -> None:
    lesson = tmp_path / "01_numpy_attention"
    lesson.mkdir()
    broken = lesson / "typo.py"
    broken.write_text(
        'STORY = "x"\nPATTERNS = []\nSAVE = {}\nEDITS = [("fill", "no such cell", "pass")]\n'
    )
    with pytest.raises(builder.CorpusError, match=r"typo\.py \(edit 1\).*no such cell"):
        builder.build(broken)


# -- correctness, proved in-process (slow) ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=by_name)
def test_submission_is_correct(path: Path, tmp_path: Path) -> None:
    built = builder.build(path)
    written = built.write(tmp_path)
    verdicts, cell_errors = runner.hidden_verdicts(built, written)
    assert cell_errors == [], "a correct notebook runs from top to bottom without an error"
    failed = [
        f"{v.grade_id}/{v.check}: {v.status} {v.message}" for v in verdicts if v.status != "passed"
    ]
    assert not failed
    graded = {v.grade_id for v in verdicts}
    assert graded == graded_ids(built.lesson), "every graded cell was exercised"


def graded_ids(lesson: str) -> set[str]:
    from attnkit_autograder.lessons.rubric import graded_cells

    return {cell.grade_id for cell in graded_cells(lesson)}


@pytest.mark.slow
@pytest.mark.parametrize("lesson", list(ASSIGNMENTS))
def test_the_in_process_check_fails_a_catalogued_mistake(lesson: str, tmp_path: Path) -> None:
    mistake = next(m for m in load_mistakes() if m.assignment == lesson)
    notebook = fill_notebook(
        builder.released_notebook(lesson), lesson, {mistake.exercise: mistake.code}
    )
    wrong = builder.Built(
        lesson, "wrong", mistake.title, (), f"{lesson}.ipynb", "jupyter", notebook, notebook
    )
    verdicts, _ = runner.hidden_verdicts(wrong, wrong.write(tmp_path))
    assert any(v.status != "passed" for v in verdicts), mistake.key


# -- the graders (slow) ------------------------------------------------------------------------


def not_full(records: list[dict]) -> list[str]:
    return [
        f"{r['student']} ({r['assignment']}): {r['score']}/{r['max_score']} "
        + "; ".join(
            f"{t['grade_id']} {t['status']}" for t in r["tests"] if t["points"] < t["max_points"]
        )
        + (f" error: {r['error']}" if r["status"] == "error" else "")
        for r in records
        if r["status"] != "graded" or r["score"] != r["max_score"]
    ]


@pytest.fixture(scope="module")
def graded_corpus(
    corpus: list[builder.Built], tmp_path_factory: pytest.TempPathFactory
) -> list[dict]:
    """The corpus graded once by `attnkit grade` (a folder per student, each file saved the
    way its student saved it): the rows of grades.json, for every path below."""
    return graded_by_attnkit(corpus, tmp_path_factory.mktemp("fair"))


def graded_by_attnkit(built: list[builder.Built], work: Path) -> list[dict]:
    """``built`` written as its students saved it and graded by `attnkit grade` in one run:
    the rows of grades.json."""
    for one in built:
        one.write(work / "submissions")
    out = work / "out"
    done = subprocess.run(
        [sys.executable, "-m", "attnkit", "grade", str(work / "submissions"), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stderr
    return json.loads((out / "grades.json").read_text())["submissions"]


@pytest.mark.slow
def test_attnkit_grade_gives_every_correct_submission_full_marks(
    corpus: list[builder.Built], graded_corpus: list[dict]
) -> None:
    records = graded_corpus
    assert sorted((r["student"], r["assignment"]) for r in records) == sorted(
        (b.student, b.lesson) for b in corpus
    )
    unfair = not_full(records)
    assert not unfair, "correct submissions short of full marks:\n" + "\n".join(unfair)


def test_no_correct_submission_reaches_a_suspect_kernel(graded_corpus: list[dict]) -> None:
    """Every kernel an honest answer reaches is known (kernels_allowed.json, or a pointwise
    or reduction step): a suspect-kernel note needs evidence. (The hostile corpus's
    sm_normaliser_from_an_unknown_kernel shows the note is given.)"""
    noted = {
        r["student"]: [n for n in r["notes"] if "neither the reference nor" in n]
        for r in graded_corpus
    }
    assert {student: notes for student, notes in noted.items() if notes} == {}


@pytest.mark.slow
def test_the_gradescope_path_gives_every_correct_submission_full_marks(
    corpus: list[builder.Built], graded_corpus: list[dict]
) -> None:
    """Gradescope's run_autograder grades with the same pipeline (tests/test_gradescope.py
    runs it end to end); what it adds is results.json, which must keep every point."""
    from compare_graders import Outcome

    from attnkit_autograder.platforms.gradescope import to_results

    outcomes = {}
    for record in graded_corpus:
        results = to_results({"submissions": [record]})
        short = [t["name"] for t in results["tests"] if t["score"] < t["max_score"]]
        maximum = sum(t["max_score"] for t in results["tests"])
        outcomes[record["student"]] = Outcome(results["score"], maximum, short)
    assert set(outcomes) == {b.student for b in corpus}
    assert_full_marks(outcomes)


@pytest.mark.slow
def test_the_nbgrader_gradebook_path_gives_every_correct_submission_full_marks(
    corpus: list[builder.Built], graded_corpus: list[dict], tmp_path: Path
) -> None:
    """The grades go into a real nbgrader course's gradebook cell by cell, and come back
    whole (`attnkit grade` on a course pushes exactly these rows)."""
    from compare_graders import gradebook_scores, nbgrader_course, outcomes_from_gradebook

    from attnkit_autograder.authoring.released import scripts_on_path
    from attnkit_autograder.platforms.nbgrader_gradebook import push_grades

    course = nbgrader_course(corpus, tmp_path)
    os.environ.update(scripts_on_path())
    assert push_grades(course, graded_corpus) == []
    assert_full_marks(outcomes_from_gradebook(corpus, gradebook_scores(course)))


def assert_full_marks(outcomes: dict) -> None:
    short = [f"{s}: {'; '.join(o.short)}" for s, o in sorted(outcomes.items()) if not o.full]
    assert not short, "correct submissions short of full marks:\n" + "\n".join(short)


# -- dtype: "float32 stays float32" is part of the contract -----------------------------------

# Two answers the corpus once counted as correct. Each returns float64 for float32 input,
# which the contract forbids ("a new NumPy array of the same shape and dtype"); the corpus
# now holds versions that keep the dtype, and these must fail, visibly and when graded.
FLOAT64_LEAKS = {
    "scale_scores": [
        "def scale_scores(scores, d_k):\n    return np.array(scores, dtype=float) / d_k ** 0.5\n",
        "def scale_scores(scores, d_k):\n    return scores / np.float64(d_k) ** 0.5\n",
    ],
    "attention_scores": [
        "def attention_scores(Q, K):\n"
        "    out = np.zeros(Q.shape[:-1] + (K.shape[-2],))\n"
        "    for i in range(Q.shape[-2]):\n"
        "        for j in range(K.shape[-2]):\n"
        "            out[..., i, j] = (Q[..., i, :] * K[..., j, :]).sum(axis=-1)\n"
        "    return out\n",
    ],
}


@pytest.mark.parametrize(
    ("exercise", "source"),
    [(e, s) for e, sources in FLOAT64_LEAKS.items() for s in sources],
    ids=lambda value: value if value in FLOAT64_LEAKS else "",
)
def test_a_float64_leak_fails_a_visible_check_and_the_hidden_suite(
    exercise: str, source: str
) -> None:
    import numpy as np

    from attnkit.implementation import LocalImplementation
    from attnkit.selfcheck import run_exercise
    from attnkit_autograder.grading.harness import reference_implementation, run_suite
    from attnkit_autograder.lessons.rubric import graded_cells
    from attnkit_solutions.exercises import reference_namespace

    slug = "01_numpy_attention"
    namespace = dict(reference_namespace(slug))
    exec(source, {"np": np}, namespace)
    visible = run_exercise(LocalImplementation(namespace), slug, exercise)
    failed = [o for o in visible if o.status != "passed"]
    assert [o.check for o in failed] == ["float32 in, float32 out"]
    assert "dtype float64, expected float32" in failed[0].message
    cell = next(c.grade_id for c in graded_cells(slug) if c.exercise == exercise)
    verdicts = run_suite(
        LocalImplementation(namespace), slug, reference_implementation(slug), {cell}
    )
    assert any(v.status != "passed" for v in verdicts)


# -- lesson.check accepts every binding of an exercise's name ---------------------------------

SOFTMAX_01 = """
import functools
import numpy as np
from attnkit.notebook import Lesson
lesson = Lesson("01_numpy_attention")

def _stable(x, axis=-1):
    x = np.asarray(x)
    top = np.max(np.where(np.isneginf(x), 0, x), axis=axis, keepdims=True)
    e = np.exp(x - top)
    total = e.sum(axis=axis, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1), 0).astype(x.dtype)
"""
SOFTMAX_02 = """
import torch
from torch import nn
from attnkit.notebook import Lesson
lesson = Lesson("02_self_attention")

def _stable(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    top = torch.where(torch.isinf(x), torch.zeros_like(x), x).amax(dim=dim, keepdim=True)
    e = torch.exp(x - top)
    total = e.sum(dim=dim, keepdim=True)
    return torch.where(total > 0, e / torch.where(total > 0, total, 1), 0)
"""
V2_METHODS = """
    def __init__(self, d_in, d_out, qkv_bias=False):
        super().__init__()
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)

    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        w = _stable(q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5)
        return w @ v
"""
BINDINGS = {
    "lambda": SOFTMAX_01 + "softmax = lambda x, axis=-1: _stable(x, axis)\nlesson.check(softmax)",
    "partial": SOFTMAX_01 + "softmax = functools.partial(_stable)\nlesson.check(softmax)",
    "callable object": SOFTMAX_01
    + "class Softmax:\n    def __call__(self, x, axis=-1):\n        return _stable(x, axis)\n"
    + "softmax = Softmax()\nlesson.check(softmax)",
    "jit-scripted, renamed": SOFTMAX_02
    + "softmax = torch.jit.script(_stable)\nlesson.check(softmax)",
    "jit-scripted, inside a function": SOFTMAX_02
    + "def run():\n    @torch.jit.script\n    def softmax(x: torch.Tensor, dim: int = -1)"
    + " -> torch.Tensor:\n        return _stable(x, dim)\n    lesson.check(softmax)\nrun()",
    "class from a base class": SOFTMAX_02
    + "class Base(nn.Module):\n"
    + V2_METHODS
    + "class SelfAttention_v2(Base):\n    pass\nlesson.check(SelfAttention_v2)",
    "class with a mixin": SOFTMAX_02
    + "class Shapes:\n    def width(self):\n        return self.W_query.out_features\n"
    + "class SelfAttention_v2(Shapes, torch.nn.modules.module.Module):\n"
    + V2_METHODS
    + "lesson.check(SelfAttention_v2)",
    "class renamed by assignment": SOFTMAX_02
    + "class MyAttention(nn.Module):\n"
    + V2_METHODS
    + "SelfAttention_v2 = MyAttention\nlesson.check(SelfAttention_v2)",
}


@pytest.mark.parametrize("binding", list(BINDINGS))
def test_lesson_check_accepts_every_binding_of_an_exercise(
    binding: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import runpy
    import warnings

    # Run as a script, so TorchScript can read the source (a kernel keeps its cells' too).
    script = tmp_path / "notebook_cells.py"
    script.write_text(BINDINGS[binding], encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit.script's own
        runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.split(":")[0] in ("softmax", "SelfAttention_v2"), out
    checks, total = first.split(": ")[1].split(" of ")
    assert checks == total.split()[0], out
    assert "grade comes from the hidden tests" in out


# -- the kernel's working folder is importable -------------------------------------------------


def test_attnkit_check_imports_a_module_the_notebook_writes(tmp_path: Path) -> None:
    """As in Jupyter: the notebook's folder is the working folder and importable, so a
    helper module written with %%writefile in one cell is imported by another (and by an
    exercise when it is called), wherever ``attnkit check`` is run from."""
    built = builder.build(CORPUS / "01_numpy_attention" / "lale_writefile_helper.py")
    path = built.write(tmp_path / "work")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    relative = Path("..") / path.relative_to(tmp_path)  # as typed, from another folder
    done = subprocess.run(
        # The console script, as students run it (`python -m` would put the cwd on sys.path).
        [str(Path(sys.executable).parent / "attnkit"), "check", "1", "--notebook", str(relative)],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (path.parent / "attention_helpers.py").is_file()
    assert not (elsewhere / "attention_helpers.py").exists()


# -- size limits judge the code, not saved outputs ---------------------------------------------


def with_big_plots(built: builder.Built, megabytes: int) -> dict:
    """The notebook as saved after drawing plots: ``megabytes`` MB of base64 PNG outputs."""
    import base64
    import copy

    notebook = copy.deepcopy(built.notebook)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4096).decode()  # ~1.4 MB
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    for index in range(int(megabytes / 1.4) + 1):
        code[index % len(code)]["outputs"].append(
            {
                "output_type": "display_data",
                "data": {"image/png": png, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
                "metadata": {},
            }
        )
    markdown = next(c for c in notebook["cells"] if c["cell_type"] == "markdown")
    markdown["attachments"] = {"plot.png": {"image/png": png}}
    return notebook


def test_saved_outputs_do_not_count_towards_the_size_limit(tmp_path: Path) -> None:
    from attnkit_autograder.grading.submission import (
        MAX_SUBMISSION_BYTES,
        Refused,
        read_submission_file,
    )

    built = builder.build(CORPUS / "01_numpy_attention" / "bilal_loops.py")
    plotted = tmp_path / "plotted.ipynb"
    plotted.write_text(json.dumps(with_big_plots(built, 40)), encoding="utf-8")
    assert plotted.stat().st_size > MAX_SUBMISSION_BYTES
    assert read_submission_file(plotted) == plotted.read_bytes()
    # Code over the limit is still refused, outputs or not.
    bloated = json.loads(json.dumps(built.notebook))
    bloated["cells"].append(
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": ["x = 1\n"] * (MAX_SUBMISSION_BYTES // 6 + 1),
        }
    )
    too_much_code = tmp_path / "too_much_code.ipynb"
    too_much_code.write_text(json.dumps(bloated), encoding="utf-8")
    with pytest.raises(Refused, match="of code"):
        read_submission_file(too_much_code)


# -- dropout: judged by its contract, never by the order of random draws ----------------------

DROPOUTS = """
import torch
from torch import nn


class HandWritten(nn.Module):
    '''Honest: torch.rand by hand, one draw per head, heads in reverse order.'''

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, w):
        if not self.training or self.p == 0:
            return w
        keep = torch.empty_like(w)
        for h in reversed(range(w.shape[1])):
            keep[:, h] = (torch.rand_like(w[:, h]) >= self.p).to(w.dtype)
        return w * keep / (1 - self.p)


class KeepsWithP(HandWritten):
    '''Wrong: keeps a weight with probability p (drops 1 - p), scaled as if right.'''

    def forward(self, w):
        if not self.training:
            return w
        return w * (torch.rand_like(w) < self.p).to(w.dtype) / (1 - self.p)


class Unscaled(HandWritten):
    '''Wrong: drops, but does not divide the kept weights by 1 - p.'''

    def forward(self, w):
        return w * (torch.rand_like(w) >= self.p).to(w.dtype) if self.training else w


class AlsoInEval(HandWritten):
    '''Wrong: drops in eval mode too.'''

    def forward(self, w):
        return nn.functional.dropout(w, self.p, training=True)


class Never(HandWritten):
    '''Wrong: no dropout at all.'''

    def forward(self, w):
        return w
"""
DROPOUT_VERDICTS = {"HandWritten": True, "KeepsWithP": False, "Unscaled": False}
DROPOUT_VERDICTS |= {"AlsoInEval": False, "Never": False}


def with_dropout(slug: str, kind: str) -> dict:
    """The references of ``slug`` with their dropout on the weights replaced by ``kind``."""
    import torch

    from attnkit_solutions.exercises import reference_namespace

    made: dict = {}
    exec(DROPOUTS, made)
    dropout_class = made[kind]
    namespace = dict(reference_namespace(slug))
    if slug == "03_causal_attention":
        base = namespace["ScaledDotProductAttention"]

        class ScaledDotProductAttention(base):
            def __init__(self, dropout: float = 0.0) -> None:
                super().__init__(dropout)
                self.dropout = dropout_class(dropout)

            def forward(self, q, k, v, mask=None):
                scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
                if mask is not None:
                    scores = scores.masked_fill(mask, -torch.inf)
                weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
                weights = self.dropout(weights)
                return weights @ v, weights

        class CausalAttention(namespace["CausalAttention"]):
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, **kwargs)
                self.attention = ScaledDotProductAttention(self.attention.dropout.p)

        namespace |= {"ScaledDotProductAttention": ScaledDotProductAttention}
        namespace |= {"CausalAttention": CausalAttention}
    else:

        class MultiHeadAttention(namespace["MultiHeadAttention"]):
            def __init__(self, *args: object, **kwargs: object) -> None:
                super().__init__(*args, **kwargs)
                self.dropout = dropout_class(self.dropout.p)

        namespace["MultiHeadAttention"] = MultiHeadAttention
    return namespace


@pytest.mark.parametrize("kind", list(DROPOUT_VERDICTS))
@pytest.mark.parametrize("slug", ["03_causal_attention", "04_multihead_attention"])
def test_dropout_is_judged_by_its_contract(slug: str, kind: str) -> None:
    """An honest hand-written, per-head dropout passes; every wrong one fails."""
    from attnkit.implementation import LocalImplementation
    from attnkit_autograder.grading.harness import reference_implementation, run_suite

    cells = {
        "03_causal_attention": {"test_sdpa_masking", "test_causal_attention_dropout"},
        "04_multihead_attention": {"test_mha_heads"},
    }[slug]
    namespace = with_dropout(slug, kind)
    verdicts = run_suite(
        LocalImplementation(namespace), slug, reference_implementation(slug), cells
    )
    dropout_tests = [v for v in verdicts if "dropout" in v.check]
    assert len(dropout_tests) == len(cells)
    failed = [f"{v.check}: {v.message}" for v in dropout_tests if v.status != "passed"]
    if DROPOUT_VERDICTS[kind]:
        assert failed == []
    else:
        assert len(failed) == len(cells), failed
    if slug == "03_causal_attention":  # the visible check says the same, before grading
        from attnkit.selfcheck import run_exercise

        visible = run_exercise(LocalImplementation(namespace), slug, "ScaledDotProductAttention")
        dropout = [o for o in visible if o.check.startswith("dropout")]
        assert [o.status == "passed" for o in dropout] == [DROPOUT_VERDICTS[kind]]


# -- time in ungraded cells, and saved plots, never cost graded points (slow) -----------------


@pytest.mark.slow
def test_a_slow_experiment_and_big_plots_still_get_full_marks(tmp_path: Path) -> None:
    """A 100 s ``time.sleep`` cell is stopped at its own limit (12 s, longer than the whole
    budget) and the exercises are graded with the whole budget; 40 MB of saved plots do not
    get a notebook refused."""
    built = builder.build(CORPUS / "01_numpy_attention" / "bilal_loops.py")
    slow = json.loads(json.dumps(built.notebook))
    experiment = builder.code_cell("import time\ntime.sleep(100)  # how does T affect speed?")
    slow["cells"].insert(3, experiment)
    folder = tmp_path / "submissions"
    (folder / "sloane").mkdir(parents=True)
    (folder / "sloane" / "01_numpy_attention.ipynb").write_text(json.dumps(slow))
    (folder / "plotter").mkdir()
    (folder / "plotter" / "01_numpy_attention.ipynb").write_text(
        json.dumps(with_big_plots(built, 40))
    )
    out = tmp_path / "out"
    done = subprocess.run(
        # A budget shorter than the experiment's limit: it must not be spent on it.
        [
            sys.executable,
            "-m",
            "attnkit",
            "grade",
            str(folder),
            "--out",
            str(out),
            "--budget",
            "8",
            "--cell-timeout",
            "12",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    records = {
        r["student"]: r for r in json.loads((out / "grades.json").read_text())["submissions"]
    }
    assert set(records) == {"sloane", "plotter"}
    assert not_full(list(records.values())) == []
    assert any("time limit" in note for note in records["sloane"]["notes"])
