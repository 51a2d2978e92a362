"""The student bundle: nothing secret inside, and it installs and checks on its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from markdown_commands import commands, is_server, jupyter_env, run, serve_briefly

from attnkit.cli import PUBLIC_COMMANDS
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook
from attnkit_autograder.authoring.released import released_path
from attnkit_autograder.grading.catalogue import load_mistakes
from attnkit_autograder.platforms.bundle import secret_lines, secrets_in

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("bundle") / "student.zip"
    done = subprocess.run(
        [sys.executable, "-m", "attnkit", "release", str(target)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return target


def test_bundle_holds_what_students_need_and_nothing_secret(bundle: Path) -> None:
    names = zipfile.ZipFile(bundle).namelist()
    prefix = "attention-kit-student/"
    for needed in (
        "README.md",
        "install.sh",
        "pyproject.toml",
        "attnkit/cli.py",
        "attnkit/notebook.py",
        "attnkit/selfcheck/lesson_04.py",
        "data/dataloader.py",
        "data/verdict.py",
        "attnkit/mistake_fingerprints.bin",
        "notebooks/01_numpy_attention.ipynb",
        "notebooks/04_multihead_attention.ipynb",
    ):
        assert prefix + needed in names, needed
    for name in names:
        for forbidden in (
            "solutions",
            "autograder",
            "suites",
            "gradebook",
            "mistakes.toml",
            "the-verdict.txt",
            "nbgrader_config",
        ):
            assert forbidden not in name, name
    assert len(secret_lines()) > 100  # the search below is for real
    assert secrets_in(bundle) == []


def test_bundle_readme_commands_work_as_written(bundle: Path, tmp_path: Path) -> None:
    """Every command of the bundle's README, typed as written, in a fresh extraction.

    The environment stands in for the student's machine: ``python3`` is this Python
    (3.11 or newer), the story comes from $ATTNKIT_VERDICT (no download), and JupyterLab
    is configured to run headless. Before the `attnkit check` commands the student has
    done the work: the notebooks hold correct answers."""
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(tmp_path)
    home = tmp_path / "attention-kit-student"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "ATTNKIT_VERDICT": str(read_verdict_path()),
    }
    env.pop("VIRTUAL_ENV", None)
    env = jupyter_env(env, tmp_path / "jupyter-config")
    typed = commands((home / "README.md").read_text())
    assert typed[0] == "bash install.sh" and any("attnkit check" in c for c in typed)
    solved = False
    for command in typed:
        if "attnkit check" in command and not solved:
            for slug in ("01_numpy_attention", "02_self_attention"):
                released = released_notebook(slug, ROOT / "assignments")
                write_notebook(fill_notebook(released, slug), home / "notebooks" / f"{slug}.ipynb")
            solved = True
        if is_server(command):
            served, output = serve_briefly(command, home, env)
            assert served, output[-3000:]
            continue
        done = run(command, home, env)
        assert done.returncode == 0, f"{command}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    attnkit = str(home / ".venv/bin/attnkit")

    untouched = released_path("01_numpy_attention", ROOT / "assignments")
    stubs = subprocess.run(
        [attnkit, "check", "--notebook", str(untouched)],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert stubs.returncode == 1 and "not implemented" in stubs.stdout, stubs.stderr

    slug = "02_self_attention"
    released = released_notebook(slug, ROOT / "assignments")
    mistake = next(m for m in load_mistakes() if m.key == f"{slug}/SelfAttention_v1/no_scaling")
    write_notebook(
        fill_notebook(released, slug, {mistake.exercise: mistake.code}),
        home / "work" / f"mistake_{slug}.ipynb",
    )
    bad = subprocess.run(
        [attnkit, "check", "--notebook", f"work/mistake_{slug}.ipynb"],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 1 and f"looks like a classic mistake: {mistake.title}" in bad.stdout

    instructor = subprocess.run(
        [attnkit, "grade", "work", "--out", "out"],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert instructor.returncode == 2 and "invalid choice: 'grade'" in instructor.stderr
    helped = subprocess.run([attnkit, "--help"], capture_output=True, text=True, timeout=60)
    listed = set(re.findall(r"^    (\w+)", helped.stdout, re.M))
    assert listed == set(PUBLIC_COMMANDS), helped.stdout  # no instructor command in the bundle

    ladder = subprocess.run(
        [str(home / ".venv/bin/python"), "-c", BUNDLE_LADDER],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "ATTNKIT_PROGRESS": str(tmp_path / "progress.jsonl")},
    )
    assert ladder.returncode == 0, ladder.stderr
    assert "softmax · hint 3 of 3: where to look" in ladder.stdout
    assert "That is the last hint here" in ladder.stdout
    assert "reference answer" not in ladder.stdout.replace("no reference answers", "")


BUNDLE_LADDER = """
import numpy as np
from attnkit.notebook import Lesson

def softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)

lesson = Lesson("01_numpy_attention")
with np.errstate(all="ignore"):
    for _ in range(5):
        lesson.check(softmax)
for _ in range(5):
    lesson.hint(softmax)
"""


def read_verdict_path() -> Path:
    from attnkit_data.verdict import locate_verdict

    return locate_verdict(allow_download=False).path
