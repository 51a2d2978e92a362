"""The student/instructor boundary, in code: the public ``attnkit`` package ships to
students and never names the instructor packages, not even in a string or a docstring,
and importing any of it loads neither of them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ROOT / "attnkit"
HIDDEN = ("attnkit_autograder", "attnkit_solutions")


def violations(package: Path) -> list[str]:
    """Every place in ``package`` that names a hidden package: an import, a name or
    attribute, or any string constant (docstrings and f-string parts included)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            words: list[str] = []
            if isinstance(node, ast.Import):
                words = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                words = [node.module or "", *(alias.name for alias in node.names)]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                words = [node.value]
            elif isinstance(node, ast.Name):
                words = [node.id]
            elif isinstance(node, ast.Attribute):
                words = [node.attr]
            for word in words:
                if any(hidden in word for hidden in HIDDEN):
                    found.append(f"{path.relative_to(package.parent)}:{node.lineno}: {word[:60]!r}")
    return found


def test_the_public_package_never_names_the_instructor_packages() -> None:
    assert violations(PUBLIC) == []


def test_a_planted_name_is_found(tmp_path: Path) -> None:
    package = tmp_path / "attnkit"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text('"""clean"""\n')
    (package / "sub" / "a.py").write_text(
        "import importlib\nimportlib.import_module('attnkit_' 'autograder.engine')\n"
    )
    (package / "sub" / "b.py").write_text('def f():\n    """See attnkit_solutions."""\n')
    (package / "sub" / "c.py").write_text("from attnkit_autograder import engine\n")
    found = violations(package)
    assert [line.split(":")[0] for line in found] == [
        "attnkit/sub/a.py", "attnkit/sub/b.py", "attnkit/sub/c.py"
    ]  # fmt: skip


def test_importing_every_public_module_loads_no_instructor_package() -> None:
    modules = sorted(
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for path in PUBLIC.rglob("*.py")
        if path.name != "__main__.py"
    )
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.startswith({HIDDEN!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
