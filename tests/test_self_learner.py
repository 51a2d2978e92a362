"""The self-learner's kit: the install cell, a workspace of one's own, the progress record,
and the released notebooks the kit builds from whatever the working tree holds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from attnkit import progress
from attnkit.assignments import ASSIGNMENTS
from attnkit.cli import main
from attnkit.errors import KitError
from attnkit.notebook import Lesson
from attnkit.setup_cell import (
    CELL_ID,
    LEARNER_REQUIREMENTS,
    TORCH_REQUIREMENT,
    colab_url,
    install_cell_source,
)
from attnkit.workspace import learner_jupyter_config, nbgrader_checksum, released_problems
from attnkit_autograder.authoring import released as released_module
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.grading.scan import tampering

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS_DIR = ROOT / "assignments"


@pytest.fixture
def record(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "record" / "progress.jsonl"
    monkeypatch.setenv("ATTNKIT_PROGRESS", str(path))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    return path


# -- the install cell ----------------------------------------------------------------------------


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_every_released_notebook_begins_with_the_locked_install_cell(slug: str) -> None:
    notebook = released_notebook(slug, ASSIGNMENTS_DIR)
    first = notebook["cells"][0]
    assert first["id"] == CELL_ID and first["cell_type"] == "code"
    assert "".join(first["source"]) == install_cell_source(ASSIGNMENTS[slug].framework)
    meta = first["metadata"]
    assert meta["nbgrader"]["locked"] and meta["nbgrader"]["checksum"] == nbgrader_checksum(first)
    assert meta["editable"] is False and meta["deletable"] is False
    needs_torch = ASSIGNMENTS[slug].framework == "torch"
    assert (TORCH_REQUIREMENT in "".join(first["source"])) == needs_torch
    # The grader reads every cell for code that reaches into it: this one never does.
    assert tampering([(1, "".join(first["source"]))]) == []


def test_the_install_cell_does_nothing_where_the_kit_is_importable(monkeypatch) -> None:
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: ran.append(a))
    for framework in ("numpy", "torch"):
        exec(compile(install_cell_source(framework), "install-cell", "exec"), {})
    assert ran == []


def test_the_install_cells_requirements_are_the_kits_own() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in (*LEARNER_REQUIREMENTS, TORCH_REQUIREMENT):
        assert requirement in declared, requirement


def test_colab_links_open_the_released_notebooks_in_the_repository() -> None:
    url = colab_url("01_numpy_attention")
    assert url.startswith("https://colab.research.google.com/github/")
    assert url.endswith("/blob/main/assignments/01_numpy_attention/01_numpy_attention.ipynb")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for slug in ASSIGNMENTS:
        assert colab_url(slug) in readme, slug


# -- as released: nbgrader's checksums ----------------------------------------------------------


def test_the_kits_checksum_is_nbgraders() -> None:
    import nbformat
    from nbgrader.utils import compute_checksum

    compared = 0
    for slug in ASSIGNMENTS:
        path = released_path(slug, ASSIGNMENTS_DIR)
        raw = json.loads(path.read_text(encoding="utf-8"))
        node = nbformat.read(path, as_version=4)
        for plain, cell in zip(raw["cells"], node.cells, strict=True):
            if "nbgrader" in cell.metadata:
                assert nbgrader_checksum(plain) == compute_checksum(cell)
                compared += 1
    assert compared > 50


def test_a_filled_stub_or_a_run_cell_is_not_as_released() -> None:
    slug = "01_numpy_attention"
    released = released_notebook(slug, ASSIGNMENTS_DIR)
    assert released_problems(released) == []
    others = {e.name: None for e in ASSIGNMENTS[slug].exercises}  # None: left as the stub
    filled = fill_notebook(released, slug, {**others, "softmax": "return x"})
    assert released_problems(filled) == ["its solution cell 'softmax' no longer holds the stub"]
    run = json.loads(json.dumps(released))
    demo = next(
        c for c in run["cells"] if c["cell_type"] == "code" and "nbgrader" not in c["metadata"]
    )
    demo["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    assert released_problems(run) == [f"its code cell {demo['id']!r} has been run"]


def git(folder: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=folder,
        check=True,
        capture_output=True,
    )


def test_the_kit_builds_from_the_committed_notebook_whatever_the_working_tree_holds(
    tmp_path: Path, monkeypatch
) -> None:
    slug = "02_self_attention"
    released = released_notebook(slug, ASSIGNMENTS_DIR)
    clone = tmp_path / "clone"
    path = write_notebook(released, clone / "assignments" / slug / f"{slug}.ipynb")
    git(clone, "init", "-q")
    git(clone, "add", "-A")
    git(clone, "commit", "-qm", "released")
    assert released_path(slug, clone / "assignments") == path

    write_notebook(fill_notebook(released, slug), path)  # a learner answered in place
    kept = released_path(slug, clone / "assignments")
    assert kept != path and json.loads(kept.read_text()) == released
    assert released_notebook(slug, clone / "assignments") == released

    git(clone, "commit", "-qam", "the answers committed too")
    monkeypatch.setattr(released_module, "_COMMITTED", {})
    with pytest.raises(KitError, match="not the lesson as released"):
        released_path(slug, clone / "assignments")


def test_release_refuses_notebooks_that_are_not_as_released(tmp_path: Path) -> None:
    from attnkit_autograder.platforms.bundle import build_bundle

    folder = tmp_path / "assignments"
    for slug in ASSIGNMENTS:
        notebook = released_notebook(slug, ASSIGNMENTS_DIR)
        if slug == "01_numpy_attention":
            notebook = fill_notebook(notebook, slug, {"causal_mask": "return None"})
        write_notebook(notebook, folder / slug / f"{slug}.ipynb")
    target = tmp_path / "bundle.zip"
    with pytest.raises(KitError) as refused:
        build_bundle(target, ROOT, folder)
    assert "solution cell 'causal_mask' no longer holds the stub" in refused.value.message
    assert "attnkit start N" in (refused.value.hint or "")
    assert not target.exists()


# -- a workspace of one's own ---------------------------------------------------------------------


def test_start_copies_a_lesson_that_check_then_finds_and_keeps_the_work(
    tmp_path: Path, monkeypatch, capsys, record: Path
) -> None:
    slug = "01_numpy_attention"
    for name in ASSIGNMENTS:
        write_notebook(
            released_notebook(name, ASSIGNMENTS_DIR),
            tmp_path / "assignments" / name / f"{name}.ipynb",
        )
    monkeypatch.chdir(tmp_path)
    assert main(["start", "1"]) == 0
    work = tmp_path / "work" / f"{slug}.ipynb"
    assert work.read_bytes() == (tmp_path / "assignments" / slug / f"{slug}.ipynb").read_bytes()
    assert "attnkit check 1" in capsys.readouterr().out

    write_notebook(fill_notebook(released_notebook(slug, ASSIGNMENTS_DIR), slug), work)
    answered = work.read_bytes()
    assert main(["start", "1"]) == 0 and work.read_bytes() == answered
    assert "already there" in capsys.readouterr().out

    assert main(["check", "1"]) == 0  # the copy in work/, not the released stubs
    assert f"work/{slug}.ipynb" in capsys.readouterr().out
    entries, warnings = progress.read()
    assert warnings == [] and {e.outcome for e in entries} == {"passed"}
    assert {e.via for e in entries} == {"attnkit check"}


def test_check_says_a_missing_notebook_is_missing(tmp_path: Path, capsys) -> None:
    missing = tmp_path / "nowhere" / "01_numpy_attention.ipynb"
    assert main(["check", "--notebook", str(missing)]) == 1
    err = capsys.readouterr().err
    assert f"{missing} does not exist" in err and "attnkit start N" in err
    assert "Traceback" not in err


def test_the_learners_jupyterlab_hides_nbgraders_instructor_tools(record: Path) -> None:
    folder = learner_jupyter_config()
    page = json.loads((folder / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"]["@jupyter/nbgrader:formgrader"] is True
    assert "@jupyter/nbgrader:validate-assignment" not in page["disabledExtensions"]
    installed = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader"
    plugins = {
        plugin
        for script in (installed / "static").glob("*.js")
        for plugin in re.findall(r'"(@jupyter/nbgrader:[a-z-]+)"', script.read_text())
    }
    assert set(page["disabledExtensions"]) < plugins  # each a real plugin of nbgrader's


# -- the progress record --------------------------------------------------------------------------


def softmax_without_max(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_right(x, axis=-1):
    x = np.asarray(x)
    shift = np.max(x, axis=axis, keepdims=True)
    exps = np.exp(x - np.where(np.isfinite(shift), shift, 0.0))
    totals = exps.sum(axis=axis, keepdims=True)
    return exps / np.where(totals == 0, 1.0, totals)


def lower_triangle(num_tokens):
    return np.tril(np.ones((num_tokens, num_tokens), dtype=bool), k=-1)


def upper_triangle(num_tokens):
    return np.triu(np.ones((num_tokens, num_tokens), dtype=bool), k=1)


def test_progress_shows_two_mistakes_met_and_fixed(tmp_path: Path, capsys, record: Path) -> None:
    """Lesson 1 worked through with two classic mistakes, each fixed: `attnkit progress`
    says so, in text and on its page."""
    lesson = Lesson("01_numpy_attention")
    with np.errstate(all="ignore"):
        for softmax, causal_mask in (
            (softmax_without_max, lower_triangle),
            (softmax_right, upper_triangle),
        ):
            lesson.check(softmax, {"softmax": softmax})
            lesson.check(causal_mask, {"causal_mask": causal_mask})
    capsys.readouterr()
    page = tmp_path / "page" / "progress.html"
    assert main(["progress", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "Lesson 1 · Attention from scratch in NumPy: 2 of 6 exercises pass" in out
    assert re.search(r"mistake met [\d-]+: no max-subtraction \(softmax\), fixed [\d-]+", out)
    assert re.search(r"mistake met [\d-]+: the wrong triangle \(causal_mask\), fixed [\d-]+", out)
    assert "scale_scores (not checked yet)" in out
    assert "Lesson 2 · Self-attention in PyTorch: not started (attnkit start 2)" in out
    html = page.read_text()
    assert html.count("<svg") >= 2 and "no max-subtraction" in html and "fixed" in html
    lines = record.read_text().splitlines()
    assert json.loads(lines[0])["schema"] == progress.SCHEMA and len(lines) == 5
    for line in lines[1:]:  # what is recorded: never the code
        assert set(json.loads(line)) == {
            "time",
            "lesson",
            "exercise",
            "outcome",
            "mistake",
            "title",
            "via",
        }
    if os.environ.get("ATTNKIT_SCREENSHOTS"):
        shots = ROOT / "artifacts"
        shots.mkdir(exist_ok=True)
        (shots / "progress.html").write_text(html)


def test_a_damaged_or_foreign_record_is_ignored_with_a_warning(
    tmp_path: Path, capsys, record: Path
) -> None:
    record.parent.mkdir(parents=True)
    record.write_bytes(b"\xff\xfe not json at all\n{}\n")
    assert main(["progress", "--html", str(tmp_path / "p.html")]) == 0
    captured = capsys.readouterr()
    assert "is not an attnkit progress record: it is ignored" in captured.err
    assert "Traceback" not in captured.err + captured.out
    Lesson("01_numpy_attention").check(softmax_right, {"softmax": softmax_right})
    assert "is not an attnkit progress record: progress is not recorded" in capsys.readouterr().out
    assert record.read_bytes().startswith(b"\xff\xfe")  # someone else's file is left alone

    record.write_text(progress.HEADER + "\n" + "{broken\n" + '["a list"]\n')
    Lesson("01_numpy_attention").check(softmax_right, {"softmax": softmax_right})
    entries, warnings = progress.read()
    assert [e.outcome for e in entries] == ["passed"] and warnings == [
        f"{record}: 2 damaged line(s) skipped"
    ]

    record.unlink()
    record.mkdir()  # not even a file
    assert main(["progress", "--html", str(tmp_path / "p.html")]) == 0
    assert "is not a file" in capsys.readouterr().err
    progress.append([progress.Entry("t", "01_numpy_attention", "softmax", "passed")])  # no raise
    assert record.is_dir()


def test_nothing_is_recorded_while_nbgrader_validates(record: Path, monkeypatch) -> None:
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    Lesson("01_numpy_attention").check(softmax_right, {"softmax": softmax_right})
    assert not record.exists()


def test_a_lesson_that_needs_torch_says_so_where_it_is_missing(monkeypatch, capsys) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "torch" else real(n, *a)
    )
    Lesson("02_self_attention")
    assert "02_self_attention needs PyTorch, which is not installed here" in capsys.readouterr().out
    Lesson("01_numpy_attention")
    assert capsys.readouterr().out == ""


def test_check_of_a_torch_lesson_without_torch_says_what_is_missing(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    import importlib.util

    slug = "02_self_attention"
    path = write_notebook(released_notebook(slug, ASSIGNMENTS_DIR), tmp_path / f"{slug}.ipynb")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "torch" else real(n, *a)
    )
    assert main(["check", "2", "--notebook", str(path)]) == 1
    assert "needs PyTorch" in capsys.readouterr().out


def test_the_command_line_lists_the_learners_commands(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = set(re.findall(r"^    (\w+)", capsys.readouterr().out, re.M))
    assert {"start", "progress", "lab", "check", "data"} <= listed


def test_the_bundle_readme_counts_its_lessons() -> None:
    from attnkit_autograder.platforms.bundle import readme

    text = readme()
    assert len(ASSIGNMENTS) == 7 and text.splitlines()[2].startswith("Seven notebooks")
    assert f"or 2 to {len(ASSIGNMENTS)}" in text


def test_the_public_package_holds_the_new_learner_modules_without_naming_the_grader() -> None:
    code = (
        "import sys, attnkit.hints, attnkit.progress, attnkit.workspace, attnkit.setup_cell\n"
        "import attnkit.hints.lesson_01, attnkit.hints.lesson_02\n"
        "print(sorted(m for m in sys.modules if m.startswith(('attnkit_autograder', "
        "'attnkit_solutions', 'torch'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
