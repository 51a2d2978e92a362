"""``attnkit demo``: build a small class of submissions of one lesson (lesson 2 unless told
otherwise) and grade it, offline.

The class is made from the released student notebook, the way the kit's tests and
benchmark make their submissions (:mod:`attnkit_autograder.authoring.corpus`):

* two students whose answers are correct;
* four students who each made one classic mistake from ``mistakes.toml``;
* a hostile student whose extra cell patches ``numpy``, ``torch`` and ``builtins`` so that
  a test running in the student's own kernel would be fooled (lesson 2's returns zeros from
  ``SelfAttention_v2``; another lesson's makes its first exercise's first classic mistake);
* a damaged file (broken JSON), which must be listed as an error, never as a silent 0.

It then runs ``attnkit grade --feedback`` on them, exactly as an instructor would, so
the demo shows the real grader: the sandbox, the per-cell summary table, grades.json,
grades.csv and an HTML report per student.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnkit.errors import KitError

from ..authoring.corpus import add_cell, fill_notebook, released_notebook, write_notebook
from ..authoring.released import released_dir
from ..classes.results import storage_name
from ..grading.catalogue import load_mistakes

SLUG = "02_self_attention"
ZEROS_V2 = "return torch.zeros(*x.shape[:-1], self.W_query.out_features)"
SABOTAGE = """
def sabotage():
    import builtins, numpy, torch
    numpy.allclose = lambda *a, **k: True
    numpy.array_equal = lambda *a, **k: True
    numpy.testing.assert_allclose = lambda *a, **k: None
    torch.allclose = lambda *a, **k: True
    torch.testing.assert_close = lambda *a, **k: None
    builtins.abs = lambda value: 0
"""
"""The hostile student's extra cell: patches what a grader in the student's own process
would compare with, then returns zeros from SelfAttention_v2."""
MARKER = ".attnkit-demo"


@dataclass(frozen=True)
class DemoStudent:
    """One member of the demo class: who, and what their submission does."""

    name: str
    story: str
    mistake: str | None = None  # the catalogue key of the mistake they made
    hostile: bool = False  # returns zeros and patches numpy, torch and builtins (SABOTAGE)
    damaged: bytes | None = None  # raw file content instead of a notebook


CLASS: tuple[DemoStudent, ...] = (
    DemoStudent("ada", "correct answers"),
    DemoStudent("ben", "correct answers"),
    DemoStudent(
        "cam",
        "classic mistake: softmax without subtracting the maximum",
        mistake=f"{SLUG}/softmax/no_max_subtraction",
    ),
    DemoStudent(
        "dee",
        "classic mistake: SelfAttention_v1 transposes a batch of keys with .T",
        mistake=f"{SLUG}/SelfAttention_v1/keys_dot_T_batched",
    ),
    DemoStudent(
        "eve",
        "classic mistake: SelfAttention_v2 ignores qkv_bias",
        mistake=f"{SLUG}/SelfAttention_v2/qkv_bias_ignored",
    ),
    DemoStudent(
        "fox",
        "classic mistake: copies nn.Linear weights without transposing them",
        mistake=f"{SLUG}/copy_v2_weights_into_v1/weights_not_transposed",
    ),
    DemoStudent(
        "gus",
        "hostile: returns zeros from SelfAttention_v2 and patches numpy/torch/builtins "
        "so that comparisons always succeed",
        hostile=True,
    ),
    DemoStudent(
        "hal", "damaged file: the notebook's JSON is cut off", damaged=b'{"cells": [{"cell'
    ),
)


def demo_class(slug: str) -> tuple[DemoStudent, ...]:
    """Lesson 2's hand-picked class; for another lesson, the same roles with the first
    classic mistake of each of its first four exercises that has one."""
    if slug == SLUG:
        return CLASS
    firsts: dict[str, str] = {}
    for mistake in load_mistakes():
        if mistake.assignment == slug and mistake.exercise not in firsts:
            firsts[mistake.exercise] = mistake.key
    chosen = list(firsts.items())[:4]
    mistaken = [
        DemoStudent(name, f"classic mistake in {exercise}: {key.rsplit('/', 1)[-1]}", key)
        for name, (exercise, key) in zip(("cam", "dee", "eve", "fox"), chosen, strict=False)
    ]
    hostile = DemoStudent(
        "gus",
        f"hostile: a classic mistake in {chosen[0][0]}, and patches numpy/torch/builtins "
        "so that comparisons always succeed",
        chosen[0][1],
        hostile=True,
    )
    return (CLASS[0], CLASS[1], *mistaken, hostile, CLASS[-1])


def submission_notebook(
    student: DemoStudent, released: dict[str, Any], slug: str
) -> dict[str, Any]:
    """The notebook ``student`` hands in."""
    mistakes = {m.key: m for m in load_mistakes()}
    if student.mistake and student.mistake not in mistakes:
        raise KitError(f"the demo's mistake {student.mistake} is not in mistakes.toml.")
    mistake = mistakes.get(student.mistake or "")
    if student.hostile:
        if slug == SLUG:
            answers = {"SelfAttention_v2": "sabotage()\n" + ZEROS_V2}
        else:
            assert mistake is not None
            answers = {mistake.exercise: "sabotage()\n" + mistake.code}
        return add_cell(fill_notebook(released, slug, answers), SABOTAGE)
    if mistake is not None:
        return fill_notebook(released, slug, {mistake.exercise: mistake.code})
    return fill_notebook(released, slug)


def build_class(folder: Path, slug: str = SLUG) -> list[Path]:
    """Write one ``<student>_<assignment>.ipynb`` per member of the lesson's class."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with released_dir(slug) as assignments:
        released = released_notebook(slug, assignments)
        for student in demo_class(slug):
            path = folder / f"{student.name}_{slug}.ipynb"
            if student.damaged is not None:
                path.write_bytes(student.damaged)
            else:
                write_notebook(submission_notebook(student, released, slug), path)
            written.append(path)
    return written


def prepare_out(out: Path) -> None:
    """Make ``out`` the demo's folder. A folder left by an earlier demo is replaced; any
    other non-empty folder is refused, so the demo never deletes someone's files."""
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).is_file():
            raise KitError(
                f"{out} exists and was not made by `attnkit demo`; the demo will not "
                "write into it.",
                "Pass another folder: attnkit demo --out DIR",
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("made by `attnkit demo`; the next demo run replaces it\n")


def ensure_lesson_data() -> Path:
    """The verified story, found or installed (download only if nowhere on disk)."""
    from attnkit_data import verdict

    try:
        return verdict.locate_verdict(allow_download=True).path
    except KitError as err:
        raise KitError(
            "the demo's lessons read the-verdict.txt in their cells or hidden tests, and "
            f"it could not be found or downloaded: {err.message}",
            err.hint,
        ) from None


def legend(slug: str = SLUG) -> str:
    """Who is who in the demo class."""
    return "\n".join(f"  {s.name:<5}{s.story}" for s in demo_class(slug))


def where_to_look(out: Path, slug: str = SLUG) -> str:
    """The closing lines: which files to open, and what each shows."""
    first_mistake = next(s for s in demo_class(slug) if s.mistake)
    example = out / "feedback" / storage_name(first_mistake.name) / f"{slug}.html"
    return "\n".join(
        [
            f"Look in {out}/:",
            "  grades.json        every submission, every graded cell, why it failed",
            "  grades.csv         one row per submission (what an LMS import wants)",
            f"  feedback/*/{slug}.html   the report each student would get, e.g.",
            f"                     {example}",
            "  submissions/       the notebooks that were graded",
            "Grade your own class the same way: attnkit grade SUBMISSIONS --out OUT --feedback",
        ]
    )


def run_demo(out: Path, jobs: int, slug: str = SLUG) -> int:
    """Build the class of lesson ``slug`` in ``out/submissions``, grade it into ``out``;
    the exit code of ``attnkit grade``."""
    from attnkit.cli import main as attnkit_main

    story = ensure_lesson_data()
    prepare_out(out)
    build_class(out / "submissions", slug)
    print(f"the lesson data: {story}")
    print(f"a class of {len(demo_class(slug))} for {slug}, in {out / 'submissions'}:")
    print(legend(slug))
    print()
    code = attnkit_main(
        ["grade", str(out / "submissions"), "--out", str(out), "--feedback", "--jobs", str(jobs)]
    )
    if code == 0:
        print()
        print(where_to_look(out, slug))
    return code
