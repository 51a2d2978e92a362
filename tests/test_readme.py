"""README.md and docs/, word for word: every fenced bash block runs as written in a fresh copy.

The copy holds the working tree's files (what a clone would hold) beside a ``shared/``
folder, with ``.venv`` standing for the virtual environment the main command makes (this
one). The two set-up commands are CI's own job (``.ci/run`` runs them; the self-learner's
install is the main command's first half); the rest run here, in order, each block as one
bash script that stops at the first failure. The only changes: the benchmark runs on a tiny
input, and the pytest lines of the development block are skipped (they are the test
command, which runs this test). Before the self-check's commands the learner has done the
work: their copies in ``work/`` hold the references' answers. At the end, as a learner who
followed the self-study path, the clone still gives a clean student bundle.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_commands import bash_blocks, is_server, jupyter_env, run, serve_briefly

from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = sorted((ROOT / "docs").glob("*.md"))
"""The design notes the README links to: their commands are run as written too."""
TINY_INPUTS = {"--submissions 1000 --nbgrader-sample 4": "--submissions 2 --nbgrader-sample 1"}
SOLVED = ("01_numpy_attention", "02_self_attention")


def marked_block(marker: str) -> str:
    after = README.split(f"<!-- {marker} -->", 1)[1]
    return bash_blocks(after)[0]


def fresh_copy(target: Path) -> Path:
    """The files a clone of this working tree holds, committed in a new repository so that
    anything a README command leaves inside it shows in `git status`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "copy", "--no-verify"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=target, check=True
        )
    (target / ".venv").symlink_to(Path(sys.executable).parent.parent)
    return target


def test_the_two_setup_commands_are_the_ones_ci_runs() -> None:
    assert marked_block("main-command").strip().endswith(".venv/bin/attnkit demo")
    assert "pytest" in marked_block("test-command")
    ci = (ROOT / ".ci" / "run").read_text()
    assert "readme_command main-command" in ci and "readme_command test-command" in ci


DEMO_CLASS, OTHERS = "the demo's class", "the other commands"
"""The README's blocks in two independent parts, each in its own fresh copy, so that the two
test workers can run them at once. Within a part, the blocks run in the README's order."""
MADE = {
    DEMO_CLASS: (
        "my-course/gradebook.db",
        "my-course-grades/grades.json",
        "demo-grades/grades.csv",
        "sharded-grades/grades.json",
        "sharded-grades/previous",
        "cluster-grades/slurm/submit",
    ),
    OTHERS: ("attention-kit-student.zip", "autograder-02.zip"),
}


def part_of(block: str) -> str:
    """The demo's class (graded again as the README shows, and put through a course) needs
    the demo first; everything else (bundles, the self-check, generate, JupyterLab, the
    benchmark) does not."""
    return DEMO_CLASS if "attnkit-demo" in block else OTHERS


def readme_blocks() -> list[str]:
    """Every block but the two set-up commands and the class of 40, which
    tests/test_class_of_40.py runs as written and checks line by line."""
    setup = {
        marked_block(m)
        for m in ("main-command", "test-command", "class-of-40", "self-study-command")
    }
    blocks = bash_blocks(README) + [b for doc in DOCS for b in bash_blocks(doc.read_text())]
    return [block for block in blocks if block not in setup]


def test_both_parts_hold_blocks() -> None:
    blocks = readme_blocks()
    assert len(blocks) >= 8
    assert {part_of(block) for block in blocks} == set(MADE)


@pytest.mark.slow
@pytest.mark.parametrize("part", list(MADE))
def test_every_readme_command_runs_as_written(part: str, tmp_path: Path) -> None:
    from attnkit_data.verdict import locate_verdict

    (tmp_path / "shared" / "data").mkdir(parents=True)
    shutil.copy(locate_verdict(allow_download=False).path, tmp_path / "shared/data")
    clone = fresh_copy(tmp_path / "attention-kit")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTNKIT_", "VIRTUAL_ENV"))}
    env = jupyter_env(env, tmp_path / "jupyter-config")
    env["XDG_DATA_HOME"] = str(tmp_path / "learner-data")  # the progress record, not the user's

    if part == DEMO_CLASS:
        # The main command's job, without its install (this environment is the install).
        demo = run(".venv/bin/attnkit demo", clone, env)
        assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]

    for block in readme_blocks():
        if part_of(block) == part:
            run_block(block, clone, env)

    # What the examples make lands outside the clone, or is git-ignored.
    left = subprocess.run(
        ["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout
    assert left == "", left
    for made in MADE[part]:
        assert (tmp_path / made).exists(), made
    if part == DEMO_CLASS:
        assert re.search(r"\bada\b", (tmp_path / "my-course" / "grades.csv").read_text())
    else:
        learner_then_release(clone, env, tmp_path)


def learner_then_release(clone: Path, env: dict[str, str], tmp_path: Path) -> None:
    """The self-study path was followed in this clone (answers in work/): the release is
    clean, and holds the lessons as committed, not the learner's answers."""
    import zipfile

    assert (clone / "work" / "01_numpy_attention.ipynb").is_file()
    released = run(".venv/bin/attnkit release ../after-self-study.zip", clone, env)
    assert released.returncode == 0, released.stdout + released.stderr
    with zipfile.ZipFile(tmp_path / "after-self-study.zip") as bundle:
        for slug in SOLVED:
            shipped = bundle.read(f"attention-kit-student/notebooks/{slug}.ipynb")
            assert shipped == (clone / "assignments" / slug / f"{slug}.ipynb").read_bytes()
            assert b"raise NotImplementedError()" in shipped
    assert (tmp_path / "learner-data" / "attnkit" / "progress.jsonl").is_file()


def run_block(block: str, clone: Path, env: dict[str, str]) -> None:
    """One fenced block as one bash script that stops at its first failure."""
    lines = [line for line in block.splitlines() if "-m pytest" not in line]
    script = "\n".join(lines)
    for long, tiny in TINY_INPUTS.items():
        script = script.replace(long, tiny)
    if is_server(script):
        served, output = serve_briefly(script, clone, env)
        assert served, output[-3000:]
        return
    if "attnkit check" in script:  # the learner has done the work, in their copies
        for slug in SOLVED:
            path = clone / "work" / f"{slug}.ipynb"
            write_notebook(fill_notebook(released_notebook(slug, ROOT / "assignments"), slug), path)
    done = run("set -e\n" + script, clone, env)
    assert done.returncode == 0, f"{script}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
