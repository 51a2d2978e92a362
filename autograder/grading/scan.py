"""Static findings in a submission's source: notes for the instructor, never a verdict.

:func:`scan_source` finds forbidden names in the source (only a call the recorder saw
while an exercise ran costs points; see :mod:`attnkit.student_process.recorder`), and
:func:`tampering` finds code that reaches into the grader's machinery (``sys.modules``,
frames, ``ctypes``, PyTorch's mode stacks, the kit's own modules), each naming the cell
and line.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from attnkit.notebook_code import parse_python


@dataclass(frozen=True)
class Finding:
    cell: int
    line: int
    what: str

    def note(self) -> str:
        return f"code cell {self.cell}, line {self.line}: {self.what}"


MAGIC_LINE = re.compile(r"^([ \t]*)(?:[!%].*|([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*)[!%].*)$")
HELP_SUFFIX = re.compile(r"^([ \t]*[\w.]+)[ \t]*\?{1,2}[ \t]*$")


PROMPT = re.compile(r"^(?:>>> ?|\.\.\. ?|In \[\d+\]: |\s*\.\.\.: ?)")
"""The prompts IPython strips from pasted sessions (``>>> ``, ``... ``, ``In [3]: ``)."""


def _cleaned(lines: list[str]) -> list[str]:
    """IPython's clean-up before it reads a cell: prompts of a pasted session removed,
    and the first line's indentation taken off every line (so a cell indented by one space
    runs). Both are undone here, line for line, as IPython does them."""
    first = next((line for line in lines if line.strip()), "")
    if PROMPT.match(first):
        lines = [PROMPT.sub("", line, count=1) for line in lines]
        first = next((line for line in lines if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    if indent:
        lines = [line[len(indent) :] if line.startswith(indent) else line for line in lines]
    return lines


def python_text(source: str) -> str:
    """The cell as Python, in one pass over its lines (the scan runs in the grader, so its
    cost must grow with the cell's length, never faster): IPython's clean-up first (see
    :func:`_cleaned`), then its magics and shell escapes (``%timeit f()``, ``!ls``,
    ``x = !ls``, ``%%writefile``'s first line) become ``pass`` (or ``None`` on the right of
    an assignment), ``obj?`` becomes ``obj``; line numbers stay as they were."""
    lines = []
    for line in _cleaned(source.split("\n")):
        magic = MAGIC_LINE.match(line)
        if magic:
            line = (
                f"{magic.group(1)}{magic.group(2)}None"
                if magic.group(2)
                else f"{magic.group(1)}pass"
            )
        elif (helped := HELP_SUFFIX.match(line)) is not None:
            line = helped.group(1)
        lines.append(line)
    return "\n".join(lines)


@functools.lru_cache(maxsize=256)
def _parse(source: str) -> ast.AST | None:
    """The cell's syntax tree, shared read-only by every rule (the lessons' own cells
    recur in every submission: each is parsed once per grader)."""
    return parse_python(python_text(source))


def readable(source: str) -> bool:
    """Whether the scan can read the cell (it parses as Python once IPython's syntax is
    taken out)."""
    return _parse(source) is not None


def scan_source(source: str, forbidden: Iterable[str]) -> list[tuple[int, str]]:
    """(line, dotted name) of each forbidden name that appears in ``source``."""
    return list(_scan_source(source, tuple(sorted(forbidden))))


@functools.lru_cache(maxsize=256)
def _scan_source(source: str, forbidden: tuple[str, ...]) -> tuple[tuple[int, str], ...]:
    finals = {path.rsplit(".", 1)[-1]: path for path in forbidden}
    tree = _parse(source) if finals else None
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in finals:
            found.append((node.lineno, finals[node.attr]))
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            found.extend(
                (node.lineno, finals[a.name])
                for a in node.names
                if a.name in finals and module.startswith(("torch", "scipy"))
            )
    return tuple(sorted(set(found)))


TAMPERING_ATTRIBUTES = {
    "modules": "sys.modules",
    "_getframe": "sys._getframe",
    "settrace": "sys.settrace",
    "setprofile": "sys.setprofile",
    "get_referrers": "gc.get_referrers",
    "get_objects": "gc.get_objects",
    "currentframe": "inspect.currentframe",
    "f_back": "a frame's f_back",
    "f_globals": "a frame's f_globals",
    "f_locals": "a frame's f_locals",
    "tb_frame": "a traceback's frames",
    "__closure__": "a function's closure",
    "_C": "PyTorch's C internals (torch._C)",
    "_python_dispatch": "PyTorch's dispatch-mode stack",
    "_pop_mode": "PyTorch's mode stack",
    "_push_mode": "PyTorch's mode stack",
    "_disable_torch_function": "PyTorch's torch-function switch",
    "DisableTorchFunction": "PyTorch's torch-function switch",
    "DisableTorchFunctionSubclass": "PyTorch's torch-function switch",
    "_disable_current_modes": "PyTorch's dispatch-mode stack",
    "import_module": "importlib.import_module (a module named at run time)",
    "getclosurevars": "inspect.getclosurevars (another function's variables)",
}
TAMPERING_MODULES = {"ctypes", "_ctypes", "cffi", "attnkit", "pyseccomp", "resource"}
_HONEST_DUNDER_NAMES = (
    "init new del repr str format bytes hash bool len iter next reversed contains call "
    "getitem setitem delitem missing enter exit aenter aexit await aiter anext "
    "eq ne lt le gt ge add radd iadd sub rsub isub mul rmul imul matmul rmatmul imatmul "
    "truediv rtruediv itruediv floordiv rfloordiv ifloordiv mod rmod pow rpow neg pos "
    "abs invert and or xor lshift rshift round floor ceil trunc int float complex index "
    "name qualname module doc file version all slots annotations class_getitem "
    "array array_priority array_function array_ufunc torch_function post_init "
    "getstate setstate copy deepcopy reduce sizeof dir class "
    "setattr getattr getattribute delattr"
)
HONEST_DUNDERS = frozenset(f"__{name}__" for name in _HONEST_DUNDER_NAMES.split())
"""Special attributes honest code uses: protocols, operators, an object's own names. Any
other (``__globals__``, ``__self__``, ``__code__``, ``__dict__``, ``__subclasses__`` …)
reaches an object's internals, which is how a submission would get at the kit's."""
PUBLIC_FROM_KIT = {("attnkit.notebook", "Lesson")}
"""The only thing a notebook takes from the kit's package: the lessons' ``Lesson`` helper.
Anything else (``attnkit.adapters``, ``attnkit.student_process.worker``,
``attnkit.notebook.X``) reaches into the machinery that records and reports the student's
own calls."""


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]`` when ``node`` is an attribute chain rooted at a name."""
    if not isinstance(node, ast.Attribute):
        return None
    chain = []
    current: ast.AST = node
    while isinstance(current, ast.Attribute):
        chain.append(current.attr)
        current = current.value
    return [current.id, *reversed(chain)] if isinstance(current, ast.Name) else None


def _kit_reach(node: ast.AST) -> str | None:
    """What an attribute chain rooted at the name ``attnkit`` reaches, if it is not the
    public ``attnkit.notebook.Lesson`` (``import attnkit.notebook`` binds ``attnkit``)."""
    path = _dotted(node)
    if path is None or path[0] != "attnkit":
        return None
    for module, name in PUBLIC_FROM_KIT:
        allowed = [*module.split("."), name]
        if path[: len(allowed)] == allowed or path == allowed[:-1]:
            return None
    return ".".join(path[:3])


def _special_attribute(node: ast.AST) -> str | None:
    """A special attribute outside HONEST_DUNDERS, read as ``x.__name__`` or through
    ``getattr``/``setattr``/``vars`` with a literal name."""
    name = None
    if isinstance(node, ast.Attribute):
        name = node.attr
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "setattr", "delattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        name = node.args[1].value
    if name is None or name in HONEST_DUNDERS:
        return None
    if isinstance(node, ast.Call) and name in TAMPERING_ATTRIBUTES:
        return name  # getattr(importlib, "import_module") reaches what the attribute does
    if not (name.startswith("__") and name.endswith("__") and len(name) > 4):
        return None
    if name in TAMPERING_ATTRIBUTES:
        return None
    if name == "__dict__" and isinstance(node, ast.Attribute) and _is_self(node.value):
        return None  # an object's own attributes: self.__dict__.update(...)
    return name


DYNAMIC_CODE = ("__import__", "exec", "eval", "compile")
"""The builtins that run code built at run time: however a cell reaches one (by name, as an
attribute of ``builtins``, from ``__builtins__``, through ``getattr``), the scan notes it."""
BUILTIN_MODULES = ("builtins", "__builtins__")


def _dynamic_code(node: ast.AST) -> str | None:
    """The run-time-code builtin that ``node`` names, or None."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in DYNAMIC_CODE:
        return node.id
    on_builtins = None
    if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_CODE:
        on_builtins, name = node.value, node.attr
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        on_builtins, name = node.value, node.slice.value
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
    ):
        on_builtins, name = node.args[0], node.args[1].value
    if (
        isinstance(on_builtins, ast.Name)
        and on_builtins.id in BUILTIN_MODULES
        and name in DYNAMIC_CODE
    ):
        return str(name)
    return None


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _honest_use(
    node: ast.AST, parents: dict[ast.AST, ast.AST], imported: frozenset[tuple[str, str]]
) -> bool:
    """``"google.colab" in sys.modules`` and ``sys.modules.get("google.colab")`` ask what is
    loaded; they change nothing. And ``model.modules()`` or ``torch.nn.modules`` is not
    ``sys.modules``: that is only ``modules`` read on a name bound to ``sys`` (or on what a
    call returned, such as an import by name)."""
    parent = parents.get(node)
    if isinstance(node, ast.Attribute) and node.attr == "modules":
        if isinstance(parent, ast.Call) and parent.func is node:
            return True
        sys_names = {name for name, module in imported if module == "sys"}
        if not (
            isinstance(node.value, ast.Call)
            or (isinstance(node.value, ast.Name) and node.value.id in sys_names)
        ):
            return True
        lookup = parents.get(parent) if isinstance(parent, ast.Attribute) else None
        if (
            isinstance(parent, ast.Attribute)
            and parent.attr == "get"
            and isinstance(lookup, ast.Call)
            and lookup.func is parent
            and all(isinstance(a, ast.Constant) for a in lookup.args)
        ):
            return True
    return (
        isinstance(parent, ast.Compare)
        and any(isinstance(op, ast.In | ast.NotIn) for op in parent.ops)
        and node is not parent.left
    )


def _imported_names(sources: Iterable[str]) -> frozenset[tuple[str, str]]:
    """(name, module) for every name an import statement binds, in any cell (``("F",
    "torch.nn.functional")``; a name imported from a module counts as that module's)."""
    names: set[tuple[str, str]] = set()
    for source in sources:
        names |= _cell_imports(source)
    return frozenset(names)


@functools.lru_cache(maxsize=256)
def _cell_imports(source: str) -> frozenset[tuple[str, str]]:
    names = set()
    tree = _parse(source)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Import):
            for a in node.names:
                names.add((a.asname, a.name) if a.asname else (a.name.split(".")[0],) * 2)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            names |= {(a.asname or a.name, module) for a in node.names if a.name != "*"}
    return frozenset(names)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_reach(node: ast.AST, imported: frozenset[str]) -> str | None:
    """A library's private name (one leading underscore) reached from an imported module:
    ``torch.overrides._get_current_function_mode_stack``, ``torch.ops.aten._softmax``. Honest
    code uses libraries' public API; its own ``self._cache`` is not from an import."""
    if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
        return None
    path = _dotted(node)
    return ".".join(path) if path is not None and path[0] in imported else None


ATTRIBUTE_CALLS = ("getattr", "setattr", "delattr", "hasattr", "vars")
MACHINERY_MODULES = frozenset(
    {
        "importlib",
        "sys",
        "builtins",
        "gc",
        "inspect",
        "types",
        "operator",
        "functools",
        "ctypes",
        "_ctypes",
        "cffi",
        "attnkit",
        "pyseccomp",
        "resource",
        "threading",
    }
)
"""Modules whose attributes reach the interpreter's own machinery: frames, modules by name,
the collector's objects. Honest code names what it takes from them."""
FRAME_NAMES = frozenset(
    {
        "tb_frame",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
        "f_code",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "_getframe",
        "__globals__",
        "__closure__",
        "__builtins__",
        "get_objects",
        "get_referrers",
        "get_referents",
    }
)
"""Names of frames' and functions' internals: in a string (``attrgetter("tb_frame")``) they
are how code walks to objects it was never given."""


def _computed_reach(node: ast.AST, imported: frozenset[tuple[str, str]]) -> str | None:
    """A machinery module's attribute named at run time (``getattr(importlib, "import_"
    + "module")``, ``vars(sys)[name]``): how a literal name the scan knows is hidden."""
    machinery = {n for n, module in imported if module.split(".")[0] in MACHINERY_MODULES}
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ATTRIBUTE_CALLS
        and node.args
        and isinstance(node.args[0], ast.Name)
        and node.args[0].id in machinery
    ):
        return None
    if node.func.id != "vars" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
        return None
    return f"a module's attribute named at run time ({node.func.id}({node.args[0].id}, ...))"


def _folded_string(node: ast.AST) -> str | None:
    """The value of a string literal, or of literals joined by ``+`` (``"attn" + "kit"``),
    read without recursion (a chain of a million ``+`` is one linear pass)."""
    parts: list[str] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BinOp) and isinstance(current.op, ast.Add):
            pending += [current.right, current.left]
        elif isinstance(current, ast.Constant) and isinstance(current.value, str):
            parts.append(current.value)
        else:
            return None
    return "".join(parts)


def _kit_named(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    """A string that names one of the kit's modules (``"attnkit.implementation"``: a module
    that code loads by name is in no import the scan reads), or a frame's internals."""
    if isinstance(parents.get(node), ast.BinOp):
        return None  # the whole expression is read where it starts
    text = _folded_string(node)
    if text is None:
        return None
    if text in FRAME_NAMES:
        return f"names {text!r} in a string (an interpreter's internals, found by name)"
    named = [part for part in text.split("attnkit.")[1:] if not part.startswith("notebook")]
    if not named:
        return None  # the lessons' own `attnkit.notebook`, mentioned in a message
    return f"names the kit's module 'attnkit.{named[0][:32]}' in a string"


def _import_reach(node: ast.Import | ast.ImportFrom) -> str | None:
    """What an import statement reaches of the grader's machinery, if anything."""
    names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
    names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
    hits = [n for n in names if n.split(".")[0] in TAMPERING_MODULES]
    # The lessons' own setup: `from attnkit.notebook import Lesson`, and the plain
    # `import attnkit.notebook` (whose later uses are checked above).
    if isinstance(node, ast.ImportFrom) and hits == ["attnkit.notebook"]:
        taken = {(node.module, a.name) for a in node.names}
        hits = (
            [] if taken <= PUBLIC_FROM_KIT else [f"attnkit.notebook.{a.name}" for a in node.names]
        )
    elif isinstance(node, ast.Import):
        hits = [n for n in hits if n != "attnkit.notebook"]
    if hits:
        return f"imports {hits[0]}"
    elif isinstance(node, ast.ImportFrom):
        # `from torch._C import DisableTorchFunction` reaches what `torch._C.X` does.
        parts = (node.module or "").split(".") + [a.name for a in node.names]
        found = [p for p in parts if p in TAMPERING_ATTRIBUTES]
        if node.module != "sys":  # torch.nn.modules is a package, not sys.modules
            found = [p for p in found if p != "modules"]
        private = [p for p in parts if _is_private(p)]
        if found:
            return TAMPERING_ATTRIBUTES[found[0]]
        elif private:
            return f"a library's private API ({'.'.join(parts)})"
    return None


def tampering(cells: Iterable[tuple[int, str]]) -> list[Finding]:
    """Code that reaches into the grader's machinery, per cell and line (a note, not a verdict)."""
    parsed = [(index, source, _parse(source)) for index, source in cells]
    imported = _imported_names(source for _, source, _ in parsed)
    findings = [
        Finding(index, line, what)
        for index, source, tree in parsed
        if tree is not None
        for line, what in _cell_tampering(source, imported)
    ]
    return sorted(set(findings), key=lambda f: (f.cell, f.line, f.what))


@functools.lru_cache(maxsize=256)
def _cell_tampering(
    source: str, imported: frozenset[tuple[str, str]]
) -> tuple[tuple[int, str], ...]:
    """(line, what) of each reach into the grader's machinery in one cell, given the names
    the notebook's imports bind."""
    tree = _parse(source)
    assert tree is not None
    names = frozenset(name for name, _ in imported)
    findings = []
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    for node in ast.walk(tree):
        what = None
        if (reach := _kit_reach(node)) is not None and not isinstance(
            parents.get(node), ast.Attribute
        ):
            what = f"reaches into {reach}"
        elif isinstance(node, ast.Attribute) and node.attr in TAMPERING_ATTRIBUTES:
            if not _honest_use(node, parents, imported):
                what = TAMPERING_ATTRIBUTES[node.attr]
        elif (name := _special_attribute(node)) is not None:
            what = TAMPERING_ATTRIBUTES.get(name) or f"an object's internals ({name})"
        elif (path := _private_reach(node, names)) is not None and not isinstance(
            parents.get(node), ast.Attribute
        ):
            what = f"a library's private API ({path})"
        elif isinstance(node, ast.Import | ast.ImportFrom):
            what = _import_reach(node)
        elif (reach := _computed_reach(node, imported) or _kit_named(node, parents)) is not None:
            what = reach
        elif (name := _dynamic_code(node)) is not None:
            called = isinstance(parents.get(node), ast.Call) and parents[node].func is node
            what = f"calls {name}()" if called else f"reaches {name}() without calling it by name"
        if what is not None:
            findings.append((getattr(node, "lineno", 0), what))
    return tuple(findings)
