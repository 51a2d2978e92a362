"""Run the lesson notebooks top to bottom in a fresh kernel, as a student or nbgrader would."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from attnkit.assignments import ASSIGNMENTS
from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.lessons.rubric import load_rubric, source_notebook

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def execute(path: Path, tmp_path: Path) -> nbformat.NotebookNode:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()  # raises CellExecutionError on the first uncaught exception
    return notebook


def texts(notebook: nbformat.NotebookNode) -> list[str]:
    out = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                out.append(output.text)
            elif output.output_type == "error":
                out.append("ERROR " + output.ename)
    return out


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_source_notebook_passes_every_visible_and_hidden_test(slug, tmp_path) -> None:
    printed = "\n".join(texts(execute(source_notebook(slug), tmp_path)))
    assert "ERROR" not in printed
    for grade_id in load_rubric(slug):
        assert f"{grade_id}: all" in printed and "hidden tests passed" in printed, grade_id
    for exercise in ASSIGNMENTS[slug].exercises:
        assert f"{exercise.name}: " in printed and "visible checks pass" in printed
    assert "FAILED" not in printed and "not implemented" not in printed


@pytest.mark.parametrize("slug", list(ASSIGNMENTS))
def test_released_notebook_runs_to_the_end_with_short_not_implemented_lines(slug, tmp_path):
    notebook = execute(released_path(slug, ROOT / "assignments"), tmp_path)
    printed = "\n".join(texts(notebook))
    assert "ERROR" not in printed and "Traceback" not in printed
    for exercise in ASSIGNMENTS[slug].exercises:
        assert f"{exercise.name}: not implemented yet" in printed, exercise.name
