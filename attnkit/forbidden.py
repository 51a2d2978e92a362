"""Find library calls that would skip the point of an exercise, and code that tampers.

Only runtime evidence costs points. While an exercise's code runs, :class:`Recorder`
watches PyTorch at two levels:

* the *function* level (a ``TorchFunctionMode``): ``torch.softmax``, ``F.softmax``,
  ``x.softmax``, ``F.scaled_dot_product_attention``, ``F.multi_head_attention_forward``
  (what ``nn.MultiheadAttention`` runs), however the function was named or aliased;
* the *dispatch* level (a ``TorchDispatchMode``): every ATen kernel reached, whatever
  Python name led there: ``torch._softmax``, ``log_softmax(...).exp()``,
  ``torch.ops.aten._softmax``, the ``_scaled_dot_product_*`` family.

Static findings never cost points: :func:`scan_source` (forbidden names in the source)
and :func:`tampering` (code that reaches into the grader's machinery: ``sys.modules``,
frames, ``gc``, ``ctypes``, PyTorch's mode stacks) become notes for the instructor, each
naming the cell and line. A student who defeats the recorder has to write exactly such
code.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .notebook_code import parse_python

SOFTMAX_KERNELS = frozenset(
    {"aten._softmax", "aten.softmax", "aten._log_softmax", "aten.log_softmax",
     "aten._safe_softmax", "aten.special_softmax", "aten.special_log_softmax"}
)  # fmt: skip
ATTENTION_KERNELS = frozenset(
    {"aten.scaled_dot_product_attention", "aten._scaled_dot_product_attention_math",
     "aten._scaled_dot_product_flash_attention", "aten._scaled_dot_product_flash_attention_for_cpu",
     "aten._scaled_dot_product_efficient_attention", "aten._scaled_dot_product_cudnn_attention",
     "aten._scaled_dot_product_fused_attention_overrideable", "aten._safe_softmax",
     "aten._native_multi_head_attention", "aten._transformer_encoder_layer_fwd"}
)  # fmt: skip

# Each forbidden call an exercise names (see attnkit.assignments), with the Python
# functions that reach it and the ATen kernels that compute it.
SOFTMAX_FUNCTIONS = (
    "torch.softmax", "torch.nn.functional.softmax", "torch.Tensor.softmax",
    "torch.log_softmax", "torch.nn.functional.log_softmax", "torch.Tensor.log_softmax",
    "torch.special.softmax", "torch.special.log_softmax", "torch._softmax",
    "torch._log_softmax", "torch.nn.functional.gumbel_softmax", "torch.nn.functional.softmin",
    "torch.sparse.softmax", "torch.sparse.log_softmax", "torch._masked_softmax",
    "torch._sparse_softmax", "torch._sparse_log_softmax",
)  # fmt: skip
ATTENTION_FUNCTIONS = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
)
SOFTMAX_PATTERNS = ("softmax",)
"""Every kernel whose name says softmax computes one in a single step, whatever its
variant: dense, log, masked, sparse, safe, special, or one PyTorch adds later."""
ATTENTION_PATTERNS = ("attention", "sdpa", "multi_head", "transformer_encoder", "_safe_softmax")
"""The same for attention: any fused attention kernel, named or not yet named here."""
FAMILIES: dict[str, tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]] = {
    "torch.softmax": (SOFTMAX_FUNCTIONS, SOFTMAX_KERNELS, SOFTMAX_PATTERNS),
    "torch.nn.functional.softmax": (SOFTMAX_FUNCTIONS, SOFTMAX_KERNELS, SOFTMAX_PATTERNS),
    "torch.Tensor.softmax": (SOFTMAX_FUNCTIONS, SOFTMAX_KERNELS, SOFTMAX_PATTERNS),
    "scipy.special.softmax": ((), frozenset(), ()),
    "torch.nn.functional.scaled_dot_product_attention": (
        ATTENTION_FUNCTIONS, ATTENTION_KERNELS, ATTENTION_PATTERNS,
    ),
    "torch.nn.MultiheadAttention": (ATTENTION_FUNCTIONS, ATTENTION_KERNELS, ATTENTION_PATTERNS),
}  # fmt: skip


@functools.cache
def _resolve(path: str) -> Any:
    import importlib

    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            owner = getattr(owner, part, None)
            if owner is None:
                return None
        return owner
    return None


def _where() -> str:
    """ " (code cell N, line M)" for the innermost notebook frame on the stack, if any."""
    import sys

    from .notebook_code import cell_of

    frame = sys._getframe(1)
    while frame is not None:
        cell = cell_of(frame.f_code.co_filename)
        if cell is not None:
            return f" (code cell {cell}, line {frame.f_lineno})"
        frame = frame.f_back
    return ""


class Recorder:
    """Record the forbidden functions and kernels reached inside the ``with`` block.

    ``used`` holds one entry per finding, e.g. ``"torch.log_softmax (code cell 3, line
    5)"`` or ``"aten._softmax, PyTorch's kernel"``. The calls still run: the grader turns
    a finding into a ``forbidden`` verdict, the self-check into a failed check.
    """

    def __init__(self, forbidden: Iterable[str]) -> None:
        self.used: dict[str, None] = {}  # in the order seen: the function before its kernel
        functions: set[str] = set()
        kernels: set[str] = set()
        patterns: set[str] = set()
        for name in forbidden:
            family_functions, family_kernels, family_patterns = FAMILIES.get(
                name, ((name,), frozenset(), ())
            )
            functions.update(family_functions)
            kernels.update(family_kernels)
            patterns.update(family_patterns)
        self.kernels = frozenset(kernels)
        self.patterns = tuple(sorted(patterns))
        self.canaries = {"asked": 0, "function": 0, "kernel": 0}
        self._in_canary: Any = None
        self._tampered = False
        self.functions: dict[Any, str] = {}
        for path in functions:
            target = _resolve(path)
            if target is not None:
                self.functions[target] = path
        self._modes: list[Any] = []

    def __enter__(self) -> Recorder:
        if not self.kernels and not self.functions:
            return self
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        recorder = self

        class Functions(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                name = recorder.functions.get(func)
                if recorder._in_canary:
                    recorder.canaries["function"] += func is recorder._in_canary
                elif name is not None:
                    recorder.used.setdefault(name + _where())
                return func(*args, **(kwargs or {}))

        class Kernels(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                name = str(func.overloadpacket)
                if recorder._in_canary:
                    recorder.canaries["kernel"] += any(p in name for p in SOFTMAX_PATTERNS)
                elif name in recorder.kernels or any(p in name for p in recorder.patterns):
                    recorder.used.setdefault(f"{name}, PyTorch's kernel{_where()}")
                return func(*args, **(kwargs or {}))

        self._modes = [Functions(), Kernels()]
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        for mode in reversed(self._modes):
            try:
                mode.__exit__(None, None, None)
            except Exception:  # code in the exercise popped or replaced PyTorch's modes
                self._tampered = True
        self._modes = []

    def canary(self) -> None:
        """Make one forbidden call the recorder must see at both levels (and keeps out of
        ``used``). Made before and after the exercise runs: a recorder that code switched
        off, replaced or popped from PyTorch's mode stacks misses the second one."""
        if not (self.kernels or self.patterns):
            return
        import torch

        self.canaries["asked"] += 1
        self._in_canary = torch.softmax  # the function the modes must see, while it runs
        try:
            torch.softmax(torch.zeros(2), 0)
        finally:
            self._in_canary = None

    def unverified(self) -> str | None:
        """Why this recorder's findings cannot be trusted (None when every canary was seen)."""
        asked = self.canaries["asked"]
        seen = self.canaries["function"] >= asked and self.canaries["kernel"] >= asked
        if self._tampered or (asked and not seen):
            return (
                "the check that it calls no library softmax or attention could not run: "
                "something in the notebook switched off or replaced PyTorch's function or "
                "dispatch hooks while it ran"
            )
        return None


# -- static findings: notes for the instructor, never a verdict -------------------------------


@dataclass(frozen=True)
class Finding:
    cell: int
    line: int
    what: str

    def note(self) -> str:
        return f"code cell {self.cell}, line {self.line}: {self.what}"


def _parse(source: str) -> ast.AST | None:
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except Exception:
        pass
    return parse_python(source)


def scan_source(source: str, forbidden: Iterable[str]) -> list[tuple[int, str]]:
    """(line, dotted name) of each forbidden name that appears in ``source``."""
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
    return sorted(set(found))


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
}
TAMPERING_MODULES = {"ctypes", "_ctypes", "cffi", "attnkit", "pyseccomp", "resource"}
PUBLIC_FROM_KIT = {("attnkit.notebook", "Lesson")}
"""The only thing a notebook takes from the kit's package: the lessons' ``Lesson`` helper.
Anything else (``attnkit.forbidden``, ``attnkit.worker``, ``attnkit.notebook.X``) reaches
into the machinery that records and reports the student's own calls."""


def _kit_reach(node: ast.AST) -> str | None:
    """What an attribute chain rooted at the name ``attnkit`` reaches, if it is not the
    public ``attnkit.notebook.Lesson`` (``import attnkit.notebook`` binds ``attnkit``)."""
    if not isinstance(node, ast.Attribute):
        return None
    chain = []
    current: ast.AST = node
    while isinstance(current, ast.Attribute):
        chain.append(current.attr)
        current = current.value
    if not (isinstance(current, ast.Name) and current.id == "attnkit"):
        return None
    path = ["attnkit", *reversed(chain)]
    for module, name in PUBLIC_FROM_KIT:
        allowed = [*module.split("."), name]
        if path[: len(allowed)] == allowed or path == allowed[:-1]:
            return None
    return ".".join(path[:3])


def _honest_use(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """``"google.colab" in sys.modules`` asks what is loaded; it changes nothing."""
    parent = parents.get(node)
    return (
        isinstance(parent, ast.Compare)
        and any(isinstance(op, ast.In | ast.NotIn) for op in parent.ops)
        and node is not parent.left
    )


def tampering(cells: Iterable[tuple[int, str]]) -> list[Finding]:
    """Code that reaches into the grader's machinery, per cell and line (a note, not a verdict)."""
    findings = []
    for index, source in cells:
        tree = _parse(source)
        if tree is None:
            continue
        parents = {
            child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)
        }
        for node in ast.walk(tree):
            what = None
            if (reach := _kit_reach(node)) is not None and not isinstance(
                parents.get(node), ast.Attribute
            ):
                what = f"reaches into {reach}"
            elif isinstance(node, ast.Attribute) and node.attr in TAMPERING_ATTRIBUTES:
                if not _honest_use(node, parents):
                    what = TAMPERING_ATTRIBUTES[node.attr]
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
                hits = [n for n in names if n.split(".")[0] in TAMPERING_MODULES]
                # The lessons' own setup: `from attnkit.notebook import Lesson`, and the plain
                # `import attnkit.notebook` (whose later uses are checked above).
                if isinstance(node, ast.ImportFrom) and hits == ["attnkit.notebook"]:
                    taken = {(node.module, a.name) for a in node.names}
                    hits = (
                        []
                        if taken <= PUBLIC_FROM_KIT
                        else [f"attnkit.notebook.{a.name}" for a in node.names]
                    )
                elif isinstance(node, ast.Import):
                    hits = [n for n in hits if n != "attnkit.notebook"]
                if hits:
                    what = f"imports {hits[0]}"
                elif isinstance(node, ast.ImportFrom):
                    # `from torch._C import DisableTorchFunction` reaches what `torch._C.X` does.
                    parts = (node.module or "").split(".") + [a.name for a in node.names]
                    found = [p for p in parts if p in TAMPERING_ATTRIBUTES]
                    if found:
                        what = TAMPERING_ATTRIBUTES[found[0]]
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("__import__", "exec", "eval", "compile")
            ):
                what = f"calls {node.func.id}()"
            if what is not None:
                findings.append(Finding(index, getattr(node, "lineno", 0), what))
    return sorted(set(findings), key=lambda f: (f.cell, f.line, f.what))
