"""Released cells computed once per sandbox instead of once per submission.

Some of a lesson's own cells compute the same thing for every student: lesson 2's data cell
tokenises the story and draws a 50,257 x 256 embedding table, half the time its notebook
takes. The grader names such cells: released cells that read nothing but modules the
lesson's setup imports and builtins. The zygote runs each once (:func:`compute`), before any
worker exists, and every worker forked afterwards holds the results, copy-on-write: what one
submission does to them never reaches another.

When a submission reaches such a cell unchanged, its worker binds the shared results in
place of running the cell (:func:`hand_over`), but only after checking, at that moment,
that everything the cell would read is what the zygote's run read: the same module objects
under the same names, the same functions under the attributes the cell uses, no builtin
shadowed, PyTorch's global defaults (dtype, device, grad mode) unchanged. Otherwise the
cell runs as usual. The zygote's run also proves the results depend on nothing else: it
runs the cell twice, from two different random states, and shares it only when both runs
give the same values, the same random state afterwards for every generator the cell
seeded, leave every other generator as it found it, and write no file.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import importlib
import io
import os
import pickle
import random
import signal
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..notebook_code import parse_python

NESTED_SCOPES = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
)  # fmt: skip
"""Code that runs later or in its own scope: a cell holding any is never shared (its reads
cannot be read off the statements in order)."""


@dataclass(frozen=True)
class CellReads:
    """What a cell reads from outside itself."""

    free: frozenset[str]
    """Names it reads before binding them."""
    attributes: frozenset[tuple[str, str]]
    """``(name, attribute)`` for every ``name.attribute`` it reads on a free name."""
    imports: frozenset[tuple[str, str | None]]
    """``(module, name)`` for ``from module import name``; ``(module, None)`` for
    ``import module``."""


def cell_reads(source: str) -> CellReads | None:
    """What the cell reads, statement by statement; None when it is not plain Python or
    holds a nested scope (see :data:`NESTED_SCOPES`)."""
    tree = parse_python(source)
    if tree is None or any(isinstance(node, NESTED_SCOPES) for node in ast.walk(tree)):
        return None
    free: set[str] = set()
    bound: set[str] = set()
    attributes: set[tuple[str, str]] = set()
    imports: set[tuple[str, str | None]] = set()
    for statement in tree.body:
        nodes = list(ast.walk(statement))
        loads = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        free |= loads - bound
        for node in nodes:
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in free
            ):
                attributes.add((node.value.id, node.attr))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                bound.add(node.id)
            elif isinstance(node, ast.Import):
                imports |= {(a.name, None) for a in node.names}
                bound |= {a.asname or a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                if node.level or any(a.name == "*" for a in node.names):
                    return None
                imports |= {(node.module or "", a.name) for a in node.names}
                bound |= {a.asname or a.name for a in node.names}
    return CellReads(frozenset(free), frozenset(attributes), frozenset(imports))


# -- the state a cell's results may depend on ---------------------------------------------------


def _generators() -> dict[str, Any]:
    """Every global random generator a cell could draw from, by name."""
    found: dict[str, Any] = {"random": random}
    if "numpy" in sys.modules:
        found["numpy"] = sys.modules["numpy"].random
    if "torch" in sys.modules:
        found["torch"] = sys.modules["torch"]
    return found


def random_state() -> dict[str, Any]:
    states: dict[str, Any] = {}
    for name, generator in _generators().items():
        if name == "random":
            states[name] = generator.getstate()
        elif name == "torch":
            states[name] = generator.get_rng_state()
        else:
            states[name] = generator.get_state()
    return states


def set_random_state(states: dict[str, Any]) -> None:
    generators = _generators()
    for name, state in states.items():
        if name == "random":
            generators[name].setstate(state)
        elif name == "torch":
            generators[name].set_rng_state(state)
        else:
            generators[name].set_state(state)


class _ValuePickler(pickle.Pickler):
    """Pickles a tensor as its dtype, shape, values and grad flag: equal values, equal bytes
    (PyTorch's own pickle names each tensor's storage by its address)."""

    def reducer_override(self, obj: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(obj, torch.Tensor):
            plain = obj.detach().cpu().contiguous()
            values = plain.view(torch.uint8).numpy().tobytes() if plain.numel() else b""
            return tuple, ((str(obj.dtype), tuple(obj.shape), values, obj.requires_grad),)
        return NotImplemented


def value_bytes(obj: Any) -> bytes:
    """Bytes that are equal for equal values (tensors compared by value)."""
    buffer = io.BytesIO()
    _ValuePickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(obj)
    return buffer.getvalue()


def _seed_all(seed: int) -> None:
    random.seed(seed)
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].random.default_generator.manual_seed(seed)


def global_defaults() -> tuple[str, ...]:
    """PyTorch's process-wide defaults that change what the same code computes."""
    torch = sys.modules.get("torch")
    if torch is None:
        return ()
    device = getattr(torch, "get_default_device", lambda: "cpu")
    return (
        str(torch.get_default_dtype()),
        str(device()),
        str(torch.is_grad_enabled()),
        str(torch.is_inference_mode_enabled()),
        str(torch.are_deterministic_algorithms_enabled()),
    )


def _files(folders: tuple[str, ...]) -> list[tuple[str, list[str]]]:
    listed = []
    for folder in folders:
        with contextlib.suppress(OSError):
            listed.append((folder, sorted(os.listdir(folder))))
    return listed


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- computing once, handing over ------------------------------------------------------------------

_MISSING = object()


@dataclass(frozen=True)
class SharedCell:
    """A cell's results, computed once, and what they were computed from."""

    bindings: dict[str, Any]
    """The names the cell binds, with the values of the zygote's run."""
    seeded: dict[str, Any]
    """The random state afterwards of each generator the cell seeded."""
    watched: tuple[tuple[str, str, str | None, Any], ...]
    """What the cell reads, in order: ``("name", name, None, object)`` for a free name (a
    builtin when the notebook's namespace lacks it), ``("attribute", name, attribute,
    object)`` for an attribute it reads on one, ``("module", module, name, object)`` for a
    name it imports (``("module", module, None, object)``: the module)."""
    defaults: tuple[str, ...]


def _resolve(module: str, attribute: str | None) -> Any:
    loaded = sys.modules.get(module, _MISSING)
    if attribute is None or loaded is _MISSING:
        return loaded
    return getattr(loaded, attribute, _MISSING)


Run = tuple[dict[str, Any], dict[str, Any], dict[str, Any]]
"""One run of a cell: the random state before, the random state after, what it bound."""


def _run_twice(
    code: Any, namespace: dict[str, Any], scratch: tuple[str, ...], timeout: float
) -> tuple[Run, Run] | None:
    """The cell run from two different random states, if both gave the same values,
    changed no global default and wrote no file. This process's random state is left as
    it was."""
    saved, defaults, files = random_state(), global_defaults(), _files(scratch)
    runs = []
    try:
        for seed in (1, 2):
            _seed_all(seed)
            before = random_state()
            run = {**namespace, "__builtins__": builtins, "__name__": "__main__"}
            with contextlib.redirect_stdout(io.StringIO()), _deadline(timeout):
                exec(code, run)
            bound = {k: v for k, v in run.items() if k not in namespace and not k.startswith("__")}
            runs.append((before, random_state(), bound))
        same_values = value_bytes(runs[0][2]) == value_bytes(runs[1][2])
    except BaseException:  # anything the cell raises, or values that do not pickle
        return None
    finally:
        set_random_state(saved)
    if not same_values or global_defaults() != defaults or _files(scratch) != files:
        return None
    return runs[0], runs[1]


def compute(
    source: str, modules: dict[str, str], scratch: tuple[str, ...] = (), timeout: float = 30.0
) -> SharedCell | None:
    """Run the cell twice in this process, from two random states, with ``modules`` (name:
    module path, what the lesson's setup imports) bound; its results if they can be shared,
    else None. This process's random state is left as it was."""
    reads = cell_reads(source)
    if reads is None:
        return None
    try:
        namespace = {
            name: importlib.import_module(modules[name]) for name in reads.free if name in modules
        }
        for module, _ in reads.imports:
            importlib.import_module(module)
    except Exception:
        return None
    missing = [n for n in reads.free - set(namespace) if not hasattr(builtins, n)]
    if missing or not all(isinstance(m, types.ModuleType) for m in namespace.values()):
        return None
    runs = _run_twice(compile(source, "<shared cell>", "exec"), namespace, scratch, timeout)
    if runs is None:
        return None
    (before1, after1, bindings), (before2, after2, _) = runs
    seeded = {}
    for name in after1:
        first, second = value_bytes(after1[name]), value_bytes(after2[name])
        if first == second:
            seeded[name] = after1[name]  # the cell seeded it: the same state from any start
        elif (first, second) != (value_bytes(before1[name]), value_bytes(before2[name])):
            return None  # it drew from the state it found: its results depend on it
    watched = [
        ("name", name, None, namespace.get(name, getattr(builtins, name, None)))
        for name in sorted(reads.free)
    ]
    watched += [
        ("attribute", name, attribute, getattr(namespace[name], attribute, None))
        for name, attribute in sorted(reads.attributes)
        if name in namespace
    ]
    watched += [
        ("module", module, attribute, _resolve(module, attribute))
        for module, attribute in sorted(reads.imports, key=str)
    ]
    return SharedCell(bindings, seeded, tuple(watched), global_defaults())


def hand_over(shared: SharedCell, namespace: dict[str, Any]) -> bool:
    """Bind the shared results into the notebook's namespace, if everything the cell would
    read now is what the zygote's run read; False (and nothing changed) otherwise."""
    for kind, name, attribute, expected in shared.watched:
        if kind == "name":
            found = namespace[name] if name in namespace else getattr(builtins, name, _MISSING)
        elif kind == "attribute":  # on a name the entries before have checked
            found = getattr(namespace[name], str(attribute), _MISSING)
        else:
            found = _resolve(name, attribute)
        if found is not expected:
            return False
    if global_defaults() != shared.defaults:
        return False
    namespace.update(shared.bindings)
    set_random_state(shared.seeded)
    return True


SHARED: dict[str, SharedCell | None] = {}
"""The zygote's shared cells by source (None: computed, and not shareable). Workers inherit
it when they are forked."""


def share(cells: list[dict[str, Any]], scratch: tuple[str, ...]) -> list[str]:
    """Compute the cells not computed yet (each ``{"source", "modules"}``); the sources
    that can be shared."""
    for cell in cells:
        source, modules = cell.get("source"), cell.get("modules")
        if not isinstance(source, str) or not isinstance(modules, dict) or source in SHARED:
            continue
        paths = {str(k): str(v) for k, v in modules.items()}
        SHARED[source] = compute(source, paths, scratch)
    return [source for source, shared in SHARED.items() if shared is not None]
