"""The student/instructor boundary, in code: the public ``attnkit`` package ships to
students and never names the instructor packages, not even in a string or a docstring,
and importing any of it loads neither of them."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
import tomllib
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


def test_the_command_line_starts_without_the_heavy_libraries() -> None:
    """Every `attnkit` command builds the whole parser first: what that loads, every grade,
    merge and export run pays (nbgrader alone is 2 s). Commands load those when they run."""
    code = (
        "import sys\n"
        "from attnkit.cli import build_parser\n"
        "build_parser()\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'nbgrader', 'copydetect', 'torch', 'matplotlib', 'jupyterlab'}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


# -- the import graph ----------------------------------------------------------------------------

PACKAGES = {
    "attnkit": "attnkit",
    "attnkit_autograder": "autograder",
    "attnkit_data": "data",
    "attnkit_solutions": "solutions",
}


def kit_modules(root: Path, packages: dict[str, str]) -> dict[str, Path]:
    """Module name -> file, for the product's packages (the hidden suites are data)."""
    found = {}
    for name, folder in packages.items():
        for path in (root / folder).rglob("*.py"):
            if path.name == "hidden_tests.py":
                continue
            parts = [name, *path.relative_to(root / folder).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Who imports whom among ``modules``, counting imports inside functions too."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                wanted = [
                    f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module
                    for a in node.names
                ]
            else:
                continue
            for target in wanted:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_product_has_no_import_cycles() -> None:
    graph = import_graph(kit_modules(ROOT, PACKAGES))
    assert len(graph) > 40
    assert cycles(graph) == []


def test_a_planted_cycle_through_a_function_local_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import thing\n")
    (package / "b.py").write_text("def thing():\n    from . import c\n")
    (package / "c.py").write_text("def other():\n    from pkg.a import x\n")
    (package / "d.py").write_text("from . import a\n")
    graph = import_graph(kit_modules(tmp_path, {"pkg": "pkg"}))
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


# -- the folders of attnkit_autograder: each imports only the folders below it ----------------

FOLDERS = ("sandbox", "lessons", "grading", "classes", "authoring", "platforms", "quality", "cli")
"""The folders of ``attnkit_autograder``, lowest first. A module imports its own folder and
the folders before it; the package's top-level modules (``nbgrader_bridge``) stand above
them all."""


def layer(module: str, package: str, folders: tuple[str, ...]) -> int:
    parts = module.split(".")
    if parts[0] != package or len(parts) == 1:
        return -1  # another package, or the package itself: its __init__ imports nothing
    return folders.index(parts[1]) if parts[1] in folders else len(folders)


def upward_imports(graph: dict[str, set[str]], package: str, folders: tuple[str, ...]) -> list[str]:
    """Every import of a module in a higher folder than the importer's."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(target, package, folders) > layer(module, package, folders) >= 0
    )


def test_every_folder_imports_only_the_folders_below_it() -> None:
    graph = import_graph(kit_modules(ROOT, PACKAGES))
    present = {m.split(".")[1] for m in graph if m.startswith("attnkit_autograder.")}
    assert set(FOLDERS) <= present
    assert upward_imports(graph, "attnkit_autograder", FOLDERS) == []


def test_a_planted_upward_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    for folder in ("low", "high"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "top.py").write_text("from .high import b\n")
    (package / "high" / "b.py").write_text("from ..low import a\n")
    (package / "low" / "a.py").write_text("def f():\n    from ..high.b import g\n")
    graph = import_graph(kit_modules(tmp_path, {"pkg": "pkg"}))
    assert upward_imports(graph, "pkg", ("low", "high")) == ["pkg.low.a -> pkg.high.b"]


# -- sizes: one job per module and per function ---------------------------------------------------

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60
MAX_PIPELINE_LINES = 40
EXCEPTIONS = ROOT / "tests" / "oversized.toml"
"""The modules and functions allowed over the limits, each with its reason: going over is a
decision someone wrote down there, not a reason to cut a function to fit."""


def oversized(modules: dict[str, Path]) -> dict[str, int]:
    """Modules over MAX_MODULE_LINES lines and functions over MAX_FUNCTION_LINES, by their
    qualified names (``module.Class.method``), with their lengths."""
    found = {}
    for name, path in sorted(modules.items()):
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found[name] = len(text.splitlines())
        found |= long_functions(ast.parse(text), name)
    return found


def long_functions(node: ast.AST, prefix: str) -> dict[str, int]:
    found = {}
    for child in ast.iter_child_nodes(node):
        name = f"{prefix}.{getattr(child, 'name', '')}"
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            length = child.end_lineno - child.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found[name] = length
        found |= long_functions(child, name if hasattr(child, "name") else prefix)
    return found


def allowed() -> dict[str, str]:
    """The written-down exceptions: qualified name -> the reason."""
    document = tomllib.loads(EXCEPTIONS.read_text(encoding="utf-8"))
    return {**document.get("modules", {}), **document.get("functions", {})}


def test_no_product_module_or_function_is_oversized_unless_written_down() -> None:
    found = oversized(kit_modules(ROOT, PACKAGES))
    exceptions = allowed()
    assert sorted(set(found) - set(exceptions)) == []
    # An exception that no longer applies is removed: the list says what is over, now.
    assert sorted(set(exceptions) - set(found)) == []
    assert all(len(reason) > 40 for reason in exceptions.values())


def test_grade_submission_reads_as_its_steps() -> None:
    from attnkit_autograder.grading import pipeline

    source = inspect.getsource(pipeline.grade_submission)
    assert len(source.splitlines()) <= MAX_PIPELINE_LINES
    for step in ("read_notebook", "run_in_sandbox", "refuse_grader_faults", "score", "diagnose"):
        assert f"{step}(grading)" in source


def test_a_planted_oversized_function_and_module_are_found(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    body = "".join(f"        x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (package / "long.py").write_text(f"class Box:\n    def long(self):\n{body}")
    (package / "big.py").write_text("".join(f"y{i} = {i}\n" for i in range(MAX_MODULE_LINES + 1)))
    assert oversized(kit_modules(tmp_path, {"pkg": "pkg"})) == {
        "pkg.big": MAX_MODULE_LINES + 1,
        "pkg.long.Box.long": MAX_FUNCTION_LINES + 1,
    }


FMT_SKIP = re.compile(r"#\s*fmt:\s*skip")


def test_no_product_code_is_kept_from_the_formatter_to_save_lines() -> None:
    """``# fmt: skip`` is for tables laid out by hand: a statement whose formatted form is
    longer is formatted (a literal of rows, a list of flags by pairs, may keep it)."""
    found = []
    for name, path in kit_modules(ROOT, PACKAGES).items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.stmt) or isinstance(node, ast.FunctionDef | ast.ClassDef):
                continue
            if not FMT_SKIP.search(lines[node.end_lineno - 1]):
                continue
            if not isinstance(
                getattr(node, "value", None), ast.List | ast.Tuple | ast.Dict | ast.Set
            ):
                found.append(f"{name}:{node.lineno}")
    assert found == []


def test_every_package_of_the_product_is_installed() -> None:
    """pyproject.toml lists the packages by hand (each top-level folder has an import name
    of its own): a folder with an ``__init__.py`` missing from the list would be absent from
    a non-editable install, the Gradescope image and the student bundle."""
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = set()
    for name, folder in PACKAGES.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([name, *parts]))
    assert found == listed


INSTALLED_AS = {"autograder": "attnkit_autograder", "solutions": "attnkit_solutions"}


def unresolved_imports(folder: Path) -> list[str]:
    """Every ``from X import Y`` under ``folder`` (those inside functions too, which no
    import at start-up runs) whose module or name does not exist in the installed kit."""
    import importlib

    found = []
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder.parent).with_suffix("").parts
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            package = parts[:-1]
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join((*base, *([node.module] if node.module else [])))
            head, _, rest = module.partition(".")
            module = ".".join(filter(None, (INSTALLED_AS.get(head, head), rest)))
            if module.split(".")[0] not in ("attnkit", *HIDDEN):
                continue
            try:
                imported = importlib.import_module(module)
            except ImportError as exc:
                found.append(f"{path.relative_to(folder.parent)}:{node.lineno}: {exc}")
                continue
            for alias in node.names:
                if alias.name == "*" or hasattr(imported, alias.name):
                    continue
                try:
                    importlib.import_module(f"{module}.{alias.name}")
                except ImportError:
                    found.append(f"{path.relative_to(folder.parent)}:{node.lineno}: "
                                 f"{module} has no {alias.name}")  # fmt: skip
    return found


def test_every_import_of_the_kits_own_names_resolves() -> None:
    """A name moved to another module leaves no import behind, not even one inside a
    function that only the sandbox's worker runs."""
    found = [
        f
        for folder in ("attnkit", "autograder", "solutions")
        for f in unresolved_imports(ROOT / folder)
    ]
    assert not found, "\n".join(found)


def test_a_planted_stale_import_is_found(tmp_path: Path) -> None:
    package = tmp_path / "attnkit"
    (package / "student_process").mkdir(parents=True)
    (package / "student_process" / "planted.py").write_text(
        "def serve():\n"
        "    from ..notebook_code import kernel_shell\n"
        "    from ..ipython_shell import kernel_shell\n"
    )
    assert unresolved_imports(package) == [
        "attnkit/student_process/planted.py:2: attnkit.notebook_code has no kernel_shell"
    ]
