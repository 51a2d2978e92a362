"""Rough edges a new user meets in the first hour: what the README promises, the CLI
accepts; what the grader writes, the people the instructor shares it with can read."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from attnkit.cli import build_parser
from attnkit_autograder.classes.results import write_atomic
from attnkit_autograder.grading.options import GradeOptions

ROOT = Path(__file__).resolve().parents[1]


def readme_visibilities() -> list[str]:
    readme = (ROOT / "docs" / "grading.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if line.startswith("- `--visibility`"))
    return re.findall(r"`([a-z_]+)`", line.split("--visibility`", 1)[1])


def test_every_visibility_the_readme_names_is_accepted() -> None:
    named = readme_visibilities()
    assert {"hidden", "after_due_date", "after_published", "visible"} <= set(named)
    for visibility in named:
        args = build_parser().parse_args(
            ["gradescope", "out.zip", "--assignment", "2", "--visibility", visibility]
        )
        assert args.visibility == visibility


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_written_results_follow_the_umask_like_any_file(tmp_path: Path, umask: int) -> None:
    """nbgrader's feedback is 0644 under the usual umask; so are the kit's reports."""
    previous = os.umask(umask)
    try:
        target = tmp_path / "feedback" / "ada" / "report.html"
        write_atomic(target, "<p>report</p>")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_the_installed_lesson_text_is_readable_like_any_file(tmp_path: Path, monkeypatch) -> None:
    from attnkit_data import verdict

    source = verdict.locate_verdict(allow_download=False).path
    monkeypatch.setenv("ATTNKIT_DATA_DIR", str(tmp_path / "data"))
    previous = os.umask(0o022)
    try:
        installed = verdict.install_copy(source, "--from")
    finally:
        os.umask(previous)
    assert installed.parent == tmp_path / "data"
    assert stat.S_IMODE(installed.stat().st_mode) == 0o644


def test_the_command_reference_is_the_parser(tmp_path: Path) -> None:
    from attnkit_autograder.authoring import command_reference

    assert command_reference.stale() == []
    readme = command_reference.PAGE.read_text(encoding="utf-8")
    for line in ("`--budget BUDGET`", "`attnkit course init DIR`", "`--visibility VISIBILITY`"):
        assert line in readme
    drifted = tmp_path / "commands.md"
    before, reference = readme.split(command_reference.START, 1)
    drifted.write_text(
        before + command_reference.START + reference.replace("per submission", "per student", 1)
    )
    assert command_reference.stale(drifted) != []
    assert command_reference.write(drifted) == drifted
    assert command_reference.stale(drifted) == []
    assert drifted.read_text(encoding="utf-8") == readme


def anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_the_readme_is_short_with_contents_and_its_links_resolve() -> None:
    """A page an instructor can scan: every section is in the contents line, the design
    material lives in docs/, and every link to a file or a heading lands somewhere."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # 460: the self-learner's "start here", a Colab link per lesson (seven), sits in the first
    # screen.
    assert len(readme.splitlines()) < 460
    sections = [line[3:] for line in readme.splitlines() if line.startswith("## ")]
    contents = next(p for p in readme.split("\n\n") if p.startswith("**Contents:**"))
    for section in sections:
        assert f"(#{anchor(section)})" in contents, section
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for target, fragment in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", text):
            if target.startswith("http"):
                continue
            linked = (page.parent / target).resolve() if target else page
            assert linked.is_file(), f"{page.name}: {target}"
            if fragment:
                headings = [
                    anchor(line.lstrip("#"))
                    for line in linked.read_text().splitlines()
                    if line.startswith("#")
                ]
                assert fragment in headings, f"{page.name}: {target}#{fragment}"


def test_a_self_learner_finds_start_here_in_the_first_screen() -> None:
    """The first screen (40 lines) holds the "start here" heading and lesson 1's Colab link,
    and its local route is the main command's install (which CI runs in a fresh clone)."""
    from attnkit.setup_cell import colab_url

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_screen = "\n".join(readme.splitlines()[:40])
    assert "## Start here: learning on your own" in first_screen
    assert colab_url("01_numpy_attention") in first_screen
    study = readme.split("<!-- self-study-command -->", 1)[1].split("```bash\n", 1)[1]
    install = study.split("```", 1)[0].strip()
    main = readme.split("<!-- main-command -->", 1)[1].split("```bash\n", 1)[1]
    assert main.split("```", 1)[0].strip().startswith(install + " && ")


def test_the_readme_self_check_sample_is_what_the_check_prints(capsys) -> None:
    """The README shows the self-check on a softmax without max-subtraction, verbatim."""
    import numpy as np

    from attnkit.notebook import Lesson

    def softmax(x, axis=-1):
        e = np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)

    with np.errstate(all="ignore"):
        Lesson("01_numpy_attention").check(softmax)
    printed = capsys.readouterr().out.strip()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sample = readme.split("```text\nsoftmax:", 1)[1].split("```", 1)[0]
    assert printed == ("softmax:" + sample).strip()


def test_an_out_folder_inside_the_submissions_is_never_a_student(tmp_path: Path) -> None:
    """The second run over a folder that holds the first run's OUT grades the same class; an
    OUT someone put notebooks into is not graded as a student, and says so in a row."""
    from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
    from attnkit_autograder.classes.discovery import discover
    from attnkit_autograder.classes.results import exclusive

    slug = "02_self_attention"
    notebook = fill_notebook(released_notebook(slug, ROOT / "assignments"), slug)
    write_notebook(notebook, tmp_path / f"ada_{slug}.ipynb")
    out = tmp_path / "grades"  # any name: the run's marker, not the name, says what it is
    with exclusive(out):
        (out / "results").mkdir()
        (out / "grades.json").write_text("{}")
    assert [s.student for s in discover(tmp_path)] == ["ada"]
    with exclusive(out):
        write_notebook(notebook, out / "feedback-copy" / f"{slug}.ipynb")
        write_notebook(notebook, out / f"zed_{slug}.ipynb")
    found = {s.student: s for s in discover(tmp_path)}
    assert found["ada"].problem is None
    assert "the mark of an attnkit grade output folder" in (found["grades"].problem or "")


def test_a_notebook_of_another_lesson_is_refused_with_the_reason(tmp_path: Path) -> None:
    """A lesson-1 notebook handed in as lesson 2: its own metadata says which lesson it is,
    so the row says so (and what to do) instead of a page of wrong-keyword failures."""
    from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
    from attnkit_autograder.classes.discovery import discover

    lesson_1 = fill_notebook(
        released_notebook("01_numpy_attention", ROOT / "assignments"), "01_numpy_attention"
    )
    write_notebook(lesson_1, tmp_path / "ada_02_self_attention.ipynb")
    (submission,) = discover(tmp_path)
    assert submission.assignment == "02_self_attention"
    assert submission.problem is not None
    assert "the notebook itself is 01_numpy_attention" in submission.problem
    assert "--assignment 01_numpy_attention" in submission.problem
    (forced,) = discover(tmp_path, "01_numpy_attention")
    assert forced.problem is None


def test_attnkit_check_refuses_a_notebook_of_another_lesson(tmp_path: Path, capsys) -> None:
    from attnkit.cli import main
    from attnkit_autograder.authoring.corpus import released_notebook, write_notebook

    path = write_notebook(
        released_notebook("01_numpy_attention", ROOT / "assignments"), tmp_path / "mine.ipynb"
    )
    assert main(["check", "2", "--notebook", str(path)]) == 1
    err = capsys.readouterr().err
    assert "is the 01_numpy_attention notebook (its metadata says so), not 02_self_attention" in err
    assert "attnkit check 01_numpy_attention --notebook" in err


@pytest.mark.slow
def test_a_syntax_error_leads_the_exercise_row_in_every_report(tmp_path: Path) -> None:
    from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
    from attnkit_autograder.classes.feedback import render_html, render_text
    from attnkit_autograder.grading.pipeline import GradeSettings, grade_submission
    from attnkit_autograder.grading.submission import Submission

    slug = "02_self_attention"
    body = "q = x @ self.W_query\nk = x @ self.W_key\nreturn softmax(q @ k.T, dim=-1 @ x"
    notebook = fill_notebook(released_notebook(slug, ROOT / "assignments"), slug,
                             {"SelfAttention_v1": body})  # fmt: skip
    path = write_notebook(notebook, tmp_path / f"sam_{slug}.ipynb")
    record = grade_submission(
        Submission("sam", slug, path), GradeSettings(GradeOptions(budget=90.0))
    )
    v1 = [t for t in record["tests"] if t["exercise"] == "SelfAttention_v1"]
    assert v1 and all(t["status"] != "passed" for t in v1)
    for test in v1:
        assert test["message"].startswith("the cell that defines SelfAttention_v1")
        assert (
            "raised SyntaxError at line" in test["message"]
            and "ipython-input" not in test["message"]
        )
        assert test["hint"] is None and test["diagnosis"] is None
    assert "raised SyntaxError" in render_text(record) and "raised SyntaxError" in render_html(
        record
    )


def test_a_damaged_files_reason_is_said_once(tmp_path: Path) -> None:
    from attnkit_autograder.classes.feedback import render_html, render_text
    from attnkit_autograder.grading.records import error_record
    from attnkit_autograder.grading.submission import Submission

    path = tmp_path / "sam_02_self_attention.ipynb"
    path.write_text("{")
    record = error_record(
        Submission("sam", "02_self_attention", path), "is not valid notebook JSON"
    )
    assert render_text(record).count("is not valid notebook JSON") == 1
    assert render_html(record).count("is not valid notebook JSON") == 1


def test_messages_say_what_happened_in_plain_words(tmp_path: Path) -> None:
    """No "at at line 1" from json's own wording, no "largest difference 0" for an
    infinity that should be there, and a cell named by its first line too."""
    import numpy as np

    from attnkit.compare import CheckFailed, expect_array
    from attnkit.notebook_code import NotebookError, read_cells
    from attnkit.notebook_run import CellOutcome

    path = tmp_path / "damaged.ipynb"
    path.write_text('{"cells": [{"source": "unterminated')
    with pytest.raises(NotebookError) as damaged:
        read_cells(path)
    assert " at at " not in str(damaged.value) and "line 1 column" in str(damaged.value)

    expected = np.array([[0.0, -np.inf]])
    with pytest.raises(CheckFailed) as wrong:
        expect_array({"kind": "ndarray", "array": np.zeros((1, 2))}, expected)
    assert "largest difference 0" not in wrong.value.message
    assert "expected -inf, got 0" in wrong.value.message

    note = CellOutcome(11, "error", "NameError", "name 'x' is not defined", 2).note(
        source="\n\ndef softmax(x, axis=-1):\n    return y\n"
    )
    assert note.startswith("code cell 11 (`def softmax(x, axis=-1):`), line 2: raised NameError")


def test_fix_the_helper_first_only_when_the_helper_can_be_the_cause() -> None:
    from attnkit_autograder.grading.explain import explain_failures

    def entry(exercise: str, message: str) -> dict:
        return {"exercise": exercise, "grade_id": f"test_{exercise}", "status": "error",
                "message": message, "hint": None, "diagnosis": None}  # fmt: skip

    undefined = [
        entry("softmax", "wrong values"),
        entry("simple_attention_matrix", "simple_attention_matrix is not defined: the ..."),
    ]
    explain_failures("02_self_attention", undefined, {})
    assert undefined[1]["hint"] is None
    wrong = [entry("softmax", "wrong values"), entry("simple_attention_matrix", "wrong values")]
    explain_failures("02_self_attention", wrong, {})
    assert "fix `softmax` first" in wrong[1]["hint"]
