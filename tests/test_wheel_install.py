"""The kit as a learner outside a clone gets it: a built wheel and the notebooks' install cell.

``python -m build`` makes a wheel and an sdist that pass ``twine check``. A fresh virtual
environment holds nothing but Jupyter's kernel and nbclient. Each released notebook, its
stubs answered by the references, runs there top to bottom with nbclient: its first cell
installs the kit from the wheel (a local folder, ``$ATTNKIT_WHEELS``) and every check
comes out green. Lesson 1 runs first, and installs no PyTorch: its checks, ``attnkit check
1`` and the hint ladder's reference all work with NumPy alone, and ``attnkit check 2``
says clearly that lesson 2 needs PyTorch. Lesson 2's install cell then installs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from attnkit.assignments import ASSIGNMENTS
from attnkit_autograder.authoring.corpus import fill_notebook, released_notebook, write_notebook

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

RUNNER = """
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

path = Path(sys.argv[1])
notebook = nbformat.read(path, as_version=4)
client = NotebookClient(
    notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
)
try:
    client.execute()
finally:
    nbformat.write(notebook, path.with_suffix(".run.ipynb"))
"""

LESSON_1_WITHOUT_TORCH = """
import importlib.util, numpy as np
assert importlib.util.find_spec("torch") is None, "torch is installed"
from attnkit.notebook import Lesson

def softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)

lesson = Lesson("01_numpy_attention")
with np.errstate(all="ignore"):
    for _ in range(3):
        lesson.check(softmax)
for _ in range(4):
    lesson.hint(softmax)
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    made = sorted(p.name for p in out.iterdir())
    assert len(made) == 2 and {Path(m).suffix for m in made} == {".gz", ".whl"}, made
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, out.iterdir())],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return out


def test_the_wheel_ships_the_kit_and_not_the_story(dist: Path) -> None:
    import zipfile

    (wheel,) = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for needed in (
        "attnkit/hints/lesson_01.py",
        "attnkit/mistake_fingerprints.bin",
        "attnkit_data/verdict.py",
    ):
        assert needed in names, needed
    assert not any("the-verdict" in name for name in names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "attnkit.references" in zipfile.ZipFile(wheel).read(entry_points).decode()


def outputs(notebook: nbformat.NotebookNode) -> str:
    printed = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                printed.append(output.text)
            elif output.output_type == "error":
                printed.append(f"ERROR {output.ename}: {output.evalue}")
    return "\n".join(printed)


def green(slug: str, printed: str) -> None:
    assert "ERROR" not in printed and "Traceback" not in printed, printed[-3000:]
    assert "FAILED" not in printed and "not implemented" not in printed, printed[-3000:]
    for exercise in ASSIGNMENTS[slug].exercises:
        counts = re.findall(
            rf"^{re.escape(exercise.name)}: (\d+) of (\d+) visible checks pass", printed, re.M
        )
        assert counts and all(a == b for a, b in counts), (slug, exercise.name, counts)


def test_each_released_notebook_installs_the_wheel_and_runs_green(
    dist: Path, tmp_path: Path
) -> None:
    from attnkit_data.verdict import locate_verdict

    venv = tmp_path / "jupyter-only"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "ipykernel", "nbclient", "nbformat"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    frozen = subprocess.run(
        [str(python), "-m", "pip", "freeze"], capture_output=True, text=True
    ).stdout
    assert "attention-kit" not in frozen and "torch" not in frozen and "nbgrader" not in frozen
    runner = tmp_path / "run_notebook.py"
    runner.write_text(RUNNER)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("VIRTUAL_ENV", "PYTHON", "ATTNKIT_"))
    }
    env.update(
        ATTNKIT_WHEELS=str(dist),
        ATTNKIT_VERDICT=str(locate_verdict(allow_download=False).path),
        ATTNKIT_PROGRESS=str(tmp_path / "progress.jsonl"),
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
    )

    def run(*command: str, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout
        )

    for slug in ASSIGNMENTS:
        folder = tmp_path / slug
        path = write_notebook(
            fill_notebook(released_notebook(slug, ROOT / "assignments"), slug),
            folder / f"{slug}.ipynb",
        )
        done = run(str(python), str(runner), str(path))
        executed = nbformat.read(path.with_suffix(".run.ipynb"), as_version=4)
        printed = outputs(executed)
        assert done.returncode == 0, done.stderr[-3000:] + printed[-3000:]
        green(slug, printed)
        if slug == "01_numpy_attention":
            assert "sha256" in printed  # the install cell ran `attnkit data`
            alone = run(str(python), "-c", LESSON_1_WITHOUT_TORCH)
            assert alone.returncode == 0, alone.stderr[-3000:]
            assert "hint 4 of 4: the reference answer" in alone.stdout
            assert "The kit's reference answer" in alone.stdout, alone.stdout[-2000:]
            checked = run(str(venv / "bin" / "attnkit"), "check", "1", "--notebook", str(path))
            assert checked.returncode == 0, checked.stdout + checked.stderr
            lesson_2 = tmp_path / "02_self_attention.ipynb"
            write_notebook(released_notebook("02_self_attention", ROOT / "assignments"), lesson_2)
            refused = run(str(venv / "bin" / "attnkit"), "check", "2", "--notebook", str(lesson_2))
            assert refused.returncode == 1 and "needs PyTorch" in refused.stdout, refused.stdout
            assert "Traceback" not in refused.stdout + refused.stderr
        elif slug == "02_self_attention":
            assert run(str(python), "-c", "import torch").returncode == 0
    record = [
        json.loads(line) for line in (tmp_path / "progress.jsonl").read_text().splitlines()[1:]
    ]
    assert {entry["lesson"] for entry in record} == set(ASSIGNMENTS)
