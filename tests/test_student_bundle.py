"""The student bundle: nothing secret inside, and it installs and checks on its own."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from attnkit.diagnosis import load_mistakes
from attnkit_autograder.bundle import secret_lines, secrets_in
from attnkit_autograder.corpus import fill_notebook, released_notebook, write_notebook

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


def test_bundle_installs_fresh_and_checks_notebooks(bundle: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(tmp_path)
    home = tmp_path / "attention-kit-student"
    subprocess.run([sys.executable, "-m", "venv", str(home / ".venv")], check=True, timeout=300)
    install = subprocess.run(
        [str(home / ".venv/bin/python"), "-m", "pip", "install", "-q", "."],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    attnkit = str(home / ".venv/bin/attnkit")

    stubs = subprocess.run(
        [attnkit, "check", "1"], cwd=home / "notebooks", capture_output=True, text=True, timeout=300
    )
    assert stubs.returncode == 1 and "not implemented" in stubs.stdout, stubs.stderr

    slug = "02_self_attention"
    released = released_notebook(slug, ROOT / "assignments")
    write_notebook(fill_notebook(released, slug), home / "work" / f"{slug}.ipynb")
    good = subprocess.run(
        [attnkit, "check", "--notebook", f"work/{slug}.ipynb"],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert good.returncode == 0, good.stdout + good.stderr

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
    assert instructor.returncode == 1 and "for instructors" in instructor.stderr
