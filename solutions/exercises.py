"""Which reference answers which exercise, declared once, on the reference itself.

Each reference that answers an exercise carries the :func:`exercise` decorator, which
states the exercise's lesson, its one-line task, the library calls it forbids and the
earlier exercises it uses. The decorated function (or ``forward`` method) is the answer:
its *body* replaces the exercise's stub. The bodies use only names that the lesson's
notebook also defines (np, torch, nn, and the lesson's earlier exercises under the same
names), so a body pasted into a released notebook's stub works there unchanged. The kit's
own tests rely on that to build correct submissions from the released notebooks.

``attnkit generate`` writes the public exercise table (``attnkit/registry_data.py``) from
these declarations, in the order the source notebooks give the exercises.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Declaration:
    """One exercise, as its reference declares it."""

    slug: str
    name: str
    """What the student defines: the function, or the class whose method this is."""
    task: str
    forbidden: tuple[str, ...]
    uses: tuple[str, ...]
    target: str
    """``module:qualname`` of the reference, e.g. ``causal_attention:CausalAttention.forward``."""


DECLARED: dict[tuple[str, str], Declaration] = {}


def exercise(
    slug: str, task: str, *, forbidden: tuple[str, ...] = (), uses: tuple[str, ...] = ()
) -> Callable[[F], F]:
    """Declare the decorated function (or method) as the answer to an exercise of ``slug``.

    The exercise is named after the function, or after the class for a method. The
    function is returned unchanged."""

    def declare(function: F) -> F:
        module = function.__module__.rpartition(".")[2]
        name = function.__qualname__.split(".")[0]
        target = f"{module}:{function.__qualname__}"
        known = DECLARED.get((slug, name))
        if known is not None and known.target != target:
            raise ValueError(f"{slug}: both {known.target} and {target} answer {name!r}")
        DECLARED[(slug, name)] = Declaration(
            slug, name, task, tuple(forbidden), tuple(uses), target
        )
        return function

    return declare


def declarations() -> dict[tuple[str, str], Declaration]:
    """Every exercise the reference modules declare, keyed by (slug, exercise name)."""
    package = importlib.import_module(__package__)
    for info in pkgutil.iter_modules(package.__path__):
        _module(info.name)
    return dict(DECLARED)


# The reference modules whose names make up each assignment's namespace, later ones
# winning. Lesson 1 is NumPy-only, so its softmax and causal_mask are the NumPy ones.
ASSIGNMENT_MODULES: dict[str, tuple[str, ...]] = {
    "01_numpy_attention": ("numpy_attention",),
    "02_self_attention": ("simple_attention", "self_attention"),
    "03_causal_attention": ("scaled_dot_product", "causal_attention"),
    "04_multihead_attention": ("scaled_dot_product", "causal_attention", "multihead_attention"),
    "05_watch_attention_learn": ("tiny_transformer", "attention_heads"),
    "06_attention_at_inference": ("inference",),
    "07_flash_attention": ("flash_attention",),
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def reference_object(slug: str, exercise: str) -> Any:
    """The function or method that answers ``exercise``."""
    found = declarations().get((slug, exercise))
    if found is None:
        raise KeyError(f"no reference declares {exercise!r} in {slug} (use @exercise)")
    module_name, qualname = found.target.split(":")
    target: Any = _module(module_name)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def reference_namespace(slug: str) -> dict[str, Any]:
    """Every public name of the assignment's reference modules, as one namespace."""
    namespace: dict[str, Any] = {}
    for module_name in ASSIGNMENT_MODULES[slug]:
        module = _module(module_name)
        namespace.update({n: getattr(module, n) for n in module.__all__})
    return namespace


def reference_answer(slug: str, exercise: str) -> dict[str, str] | None:
    """The reference answer to ``exercise`` for the hint ladder's last rung (the entry point
    ``attnkit.references`` names this): its body as it would fill the stub, and its
    docstring without the contract, which the stub already states. Only the lesson's own
    modules are imported, so lesson 1's answer is found without PyTorch."""
    for module_name in ASSIGNMENT_MODULES.get(slug, ()):
        _module(module_name)
    found = DECLARED.get((slug, exercise)) or declarations().get((slug, exercise))
    if found is None:
        return None
    module_name, qualname = found.target.split(":")
    target: Any = _module(module_name)
    owner: Any = None
    for part in qualname.split("."):
        owner, target = target, getattr(target, part)
    source = textwrap.dedent(inspect.getsource(target))
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
    body = function.body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    lines = source.splitlines()
    code = textwrap.dedent("\n".join(lines[body[0].lineno - 1 : body[-1].end_lineno]))
    doc = target.__doc__ or (owner.__doc__ if inspect.isclass(owner) else None) or ""
    return {"code": code, "explanation": without_contract(inspect.cleandoc(doc))}


def without_contract(doc: str) -> str:
    """A docstring without its ``Contract:`` paragraph (and the lines indented under it)."""
    kept, skipping = [], False
    for line in doc.splitlines():
        if line.startswith("Contract:"):
            skipping = True
            continue
        if skipping and (line.startswith((" ", "\t")) or (line.strip() and not kept)):
            continue
        if skipping and not line.strip():
            skipping = False
            continue
        kept.append(line)
    return "\n".join(kept).strip()
