"""The Gradescope autograder, run the way Gradescope runs it.

The zip is unpacked into ``autograder/source``, ``setup.sh`` installs the kit into
``autograder/venv`` (its apt and download steps skipped: this machine's environment
provides the dependencies), and ``run_autograder`` grades ``autograder/submission``.
``results/results.json`` is checked against Gradescope's published results format.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.platforms.gradescope import to_results

ROOT = Path(__file__).resolve().parents[1]
SLUG = "01_numpy_attention"
FULL_MARKS = 13.0

# Gradescope's autograder specification, "Output format": the keys it reads.
RESULT_KEYS = {
    "score",
    "execution_time",
    "output",
    "output_format",
    "test_output_format",
    "test_name_format",
    "visibility",
    "stdout_visibility",
    "extra_data",
    "tests",
    "leaderboard",
}
TEST_KEYS = {
    "score",
    "max_score",
    "status",
    "name",
    "name_format",
    "number",
    "output",
    "output_format",
    "tags",
    "visibility",
    "extra_data",
}
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


def schema_problems(results: dict[str, Any]) -> list[str]:
    """Everything in ``results`` that Gradescope's results format does not allow."""
    problems = [f"unknown top-level key {k!r}" for k in set(results) - RESULT_KEYS]
    tests = results.get("tests")
    if "score" not in results and not (tests and all("score" in t for t in tests)):
        problems.append("no score: neither a total nor one on every test")
    if "score" in results and not isinstance(results["score"], int | float):
        problems.append("score is not a number")
    if not isinstance(tests, list):
        return [*problems, "tests is not a list"]
    for vis in (results.get("visibility"), results.get("stdout_visibility")):
        if vis is not None and vis not in VISIBILITIES:
            problems.append(f"visibility {vis!r}")
    for i, test in enumerate(tests):
        problems += [f"tests[{i}]: unknown key {k!r}" for k in set(test) - TEST_KEYS]
        for key in ("name", "output"):
            if not isinstance(test.get(key), str):
                problems.append(f"tests[{i}].{key} is not a string")
        for key in ("score", "max_score"):
            if not isinstance(test.get(key), int | float):
                problems.append(f"tests[{i}].{key} is not a number")
        if not problems and not 0 <= test["score"] <= test["max_score"]:
            problems.append(f"tests[{i}]: score outside 0..max_score")
        if test.get("status") not in ("passed", "failed"):
            problems.append(f"tests[{i}].status {test.get('status')!r}")
        if test.get("visibility") not in VISIBILITIES:
            problems.append(f"tests[{i}].visibility {test.get('visibility')!r}")
    return problems


def test_schema_check_rejects_what_gradescope_would() -> None:
    good = {
        "score": 1.0,
        "tests": [
            {"name": "a", "score": 1, "max_score": 1, "status": "passed", "output": "",
             "visibility": "visible"}
        ],
    }  # fmt: skip
    assert schema_problems(good) == []
    assert schema_problems({**good, "points": 3})
    assert schema_problems({**good, "tests": [{**good["tests"][0], "status": "error"}]})
    assert schema_problems({**good, "tests": [{**good["tests"][0], "score": 2}]})
    assert schema_problems({**good, "tests": [{**good["tests"][0], "visibility": "later"}]})
    assert schema_problems({"tests": [{k: v for k, v in good["tests"][0].items() if k != "score"}]})


def test_results_for_an_ungradable_submission() -> None:
    record = {
        "status": "error",
        "error": "x.ipynb: is empty.",
        "score": 0.0,
        "tests": [
            {
                "exercise": "softmax",
                "grade_id": "t",
                "points": 0.0,
                "max_points": 2.0,
                "status": "error",
                "message": "is empty",
                "hint": None,
            }
        ],
    }
    results = to_results({"submissions": [record]}, "hidden")
    assert results["score"] == 0.0 and "could not be graded" in results["output"]
    assert results["tests"][0]["visibility"] == "hidden"
    assert schema_problems(results) == []
    assert "exactly one notebook" in to_results({"submissions": []})["output"]


def test_a_grader_fault_records_no_score_on_gradescope(tmp_path, monkeypatch) -> None:
    """The grader failed, not the student: run_autograder exits 1 and leaves no results.json
    (Gradescope then shows an autograder failure staff can rerun), never a 0, and a stale
    results.json from an earlier run is not left to stand in for it."""
    from attnkit_autograder.cli import run_autograder
    from attnkit_autograder.platforms import gradescope

    record = {"status": "error", "error": "the grader failed twice", "fault": "grader"}
    with pytest.raises(gradescope.GraderFault):
        to_results({"submissions": [record]})
    monkeypatch.setattr(
        run_autograder, "grade_for_gradescope", lambda *a: to_results({"submissions": [record]})
    )
    stale = tmp_path / "results" / "results.json"
    stale.parent.mkdir()
    stale.write_text('{"score": 0}')
    assert run_autograder.main(["--root", str(tmp_path), "--assignment", "2"]) == 1
    assert not stale.exists()


@pytest.fixture(scope="module")
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Gradescope's /autograder after the image build: source unzipped, setup.sh run."""
    home = tmp_path_factory.mktemp("gradescope") / "autograder"
    archive = home.parent / "autograder.zip"
    built = subprocess.run(
        [sys.executable, "-m", "attnkit", "gradescope", str(archive), "--assignment", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    with zipfile.ZipFile(archive) as zipped:
        names = set(zipped.namelist())
        zipped.extractall(home / "source")
    # Gradescope's layout: both scripts at the zip's root, the project beside them.
    assert {"setup.sh", "run_autograder", "pyproject.toml"} <= names
    assert any(n.startswith("autograder/lessons/l02_self_attention/") for n in names)
    for script in ("setup.sh", "run_autograder"):
        os.chmod(home / "source" / script, 0o755)  # zipfile does not restore modes
    shutil.copy(home / "source" / "run_autograder", home / "run_autograder")

    env = {
        **os.environ,
        "ATTNKIT_AUTOGRADER_ROOT": str(home),
        "ATTNKIT_SETUP_OFFLINE_SITE": sysconfig.get_paths()["purelib"],
        "ATTNKIT_SETUP_PYTHON": sys.executable,
    }
    setup = subprocess.run(
        ["bash", str(home / "source" / "setup.sh")],
        cwd=home / "source",
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert setup.returncode == 0, setup.stdout + setup.stderr
    # The kit the autograder runs is the one installed from the zip, not this checkout.
    probe = "import attnkit_autograder; print(attnkit_autograder.__file__)"
    where = subprocess.run(
        [str(home / "venv/bin/python"), "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert str(home / "venv") in where and str(ROOT) not in where
    return home


def run_autograder(home: Path, notebook: dict[str, Any]) -> dict[str, Any]:
    """Put ``notebook`` in as the submission, run run_autograder, return results.json."""
    shutil.rmtree(home / "submission", ignore_errors=True)
    shutil.rmtree(home / "results", ignore_errors=True)
    write_notebook(notebook, home / "submission" / "my_attention_homework.ipynb")
    env = {**os.environ, "ATTNKIT_AUTOGRADER_ROOT": str(home)}
    env.pop("ATTNKIT_VERDICT", None)
    done = subprocess.run(
        [str(home / "run_autograder")],
        cwd=home,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((home / "results" / "results.json").read_text())
    assert schema_problems(results) == [], results
    return results


@pytest.mark.slow
def test_correct_notebook_gets_full_marks(autograder: Path) -> None:
    released = released_notebook(SLUG, ROOT / "assignments")
    results = run_autograder(autograder, fill_notebook(released, SLUG))
    assert results["score"] == FULL_MARKS == sum(t["max_score"] for t in results["tests"])
    assert all(t["status"] == "passed" for t in results["tests"])
    assert all(t["visibility"] == "after_published" for t in results["tests"])


@pytest.mark.slow
def test_buggy_notebook_gets_partial_credit(autograder: Path) -> None:
    released = released_notebook(SLUG, ROOT / "assignments")
    # A wrong embed_one_hot: worth 1 point, and no other exercise uses it.
    buggy = fill_notebook(released, SLUG, {"embed_one_hot": "return E[token_ids] * 0"})
    results = run_autograder(autograder, buggy)
    assert results["score"] == FULL_MARKS - 1, results.get("output")
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert [t["name"] for t in failed] == ["embed_one_hot: test_embed_one_hot"]
    assert failed[0]["score"] == 0 and "wrong values" in failed[0]["output"]


@pytest.mark.slow
def test_a_worker_that_stops_reading_ends_run_autograder_with_the_cause(tmp_path: Path) -> None:
    """A notebook whose last cell makes its process stop reading the grader's requests (it
    swaps the worker's reader for one that never returns) is still graded by
    run_autograder: every call ends at its own deadline, the submission's budget bounds the
    whole, and results.json names the cause for each test the notebook lost."""
    slug = "01_numpy_attention"
    notebook = fill_notebook(released_notebook(slug, ROOT / "assignments"), slug)
    stall = (
        "import time\n"
        "import attnkit.student_process.worker as worker\n"
        "worker.read_frame = lambda fd: time.sleep(10**6)\n"
    )
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": stall}  # fmt: skip
    notebook = {**notebook, "cells": [*notebook["cells"], cell]}
    write_notebook(notebook, tmp_path / "submission" / "homework.ipynb")
    budget, timeout = 20, 2
    done = subprocess.run(
        [sys.executable, "-m", "attnkit_autograder.cli.run_autograder", "--root", str(tmp_path),
         "--assignment", "1", "--budget", str(budget), "--timeout", str(timeout)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    assert schema_problems(results) == []
    lost = [t for t in results["tests"] if t["score"] < t["max_score"]]
    assert lost and results["score"] < sum(t["max_score"] for t in results["tests"])
    causes = ("no answer after the time limit", "did not return", "not run")
    assert all(any(c in t["output"] for c in causes) for t in lost), [t["output"] for t in lost]
