"""Kernels withheld: a worker in which PyTorch has no softmax (or no fused attention) at all.

The recorder (:mod:`.recorder`) watches from inside the submission's process, so code
written against it can switch PyTorch's hooks off for the length of one call, or walk the
frames to its findings. This module proves "from scratch" another way, one that nothing in
the process can undo: before any student code runs, the worker replaces every kernel of the
forbidden family, in every namespace and under every dispatch key that computes values,
by a kernel that raises :class:`KernelWithheld`. An exercise graded in such a worker either
computes its answer from other kernels, which is what the lesson asks for, or fails.

Why no Python code in the process can undo it:

* a registration lasts as long as the handle PyTorch returned for it; the handle's count of
  references is raised once and the handle dropped, so no Python object refers to it and the
  collector (which does not track it) cannot list it: nothing can deregister the withheld
  kernels, and so bring back the originals;
* a kernel registered later for the same key shadows the withheld one, but it is the
  notebook's own code (from scratch, then); none can call the kernel it shadows;
* guards, ``redispatch`` and switched-off modes only choose among registered kernels.

The limit: code that reads and writes the process's raw memory (numpy builds an array over
any address it is given, and no audit event says so) can find the handles and reset them,
as it could rewrite any other state of the process. Withholding then falls back to the
recorder's evidence, which such code can also silence; see docs/security.md.

Which family is withheld is the grader's choice, per exercise (see :data:`PROFILES`): an
exercise that may use a library softmax (lesson 2's attention classes) runs where only the
fused attention kernels are withheld.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import re
import types
from collections.abc import Iterator
from typing import Any

from .recorder import ATTENTION_PATTERNS, SOFTMAX_PATTERNS, canary_running

# The recorder's name families (one home for what a softmax or attention kernel is called).
SOFTMAX_OPS = "|".join(map(re.escape, SOFTMAX_PATTERNS))
ATTENTION_OPS = "|".join(map(re.escape, ATTENTION_PATTERNS))
PROFILES = {
    # A fused attention kernel computes a softmax in one step too (one query over n keys,
    # identity values): where the softmax is to be written by hand, both are withheld.
    "softmax": re.compile(f"{SOFTMAX_OPS}|{ATTENTION_OPS}", re.IGNORECASE),
    "attention": re.compile(ATTENTION_OPS, re.IGNORECASE),
}
"""The grader's names for what a worker withholds, and the kernel names (after the
namespace) each covers. A kernel PyTorch adds later with such a name is covered too."""

WITHHELD_TYPE = "KernelWithheld"
"""The name the grader reads in a withheld kernel's error (a notebook could raise one of
its own name: that only fails its own exercise)."""


class KernelWithheld(RuntimeError):
    """A kernel this worker does not have: the exercise must compute without it."""


LENT_EXIT = 86
"""How a worker ends when a lent call reaches a withheld kernel (see :func:`lent`): the
zygote reports the status, so the grader asks that exercise's own worker instead."""


class _Reach:
    """What this worker's withheld kernels saw. Only the grader's own choices rest on it (is
    this worker's state Jupyter's, may it answer for a laxer one), and a notebook that
    changes it can only have its own exercises answered where more is withheld."""

    count = 0
    """Withheld kernels reached so far (caught or not): the cells' count tells the grader
    whether they ran as they would in Jupyter."""
    lent = False
    """The current call is lent (see :func:`lent`)."""


_exit = os._exit  # bound before any student code runs


def _raiser(what: str) -> Any:
    def withheld(*args: Any, **kwargs: Any) -> Any:
        if canary_running():
            raise KernelWithheld(what)  # the recorder's own: nobody reads where it was
        _Reach.count += 1
        if _Reach.lent:
            _exit(LENT_EXIT)  # nothing can catch it: the call is asked elsewhere
        from .recorder import _where

        # Named as the recorder names a kernel, with the notebook's cell and line.
        raise KernelWithheld(f"{what}{_where()}")

    return withheld


def reached() -> int:
    """How many times this worker's withheld kernels were reached (see :class:`_Reach`)."""
    return _Reach.count


@contextlib.contextmanager
def lent(on: bool = True) -> Iterator[None]:
    """A call this worker answers for a worker that withholds less (the grader's choice, see
    autograder.withholding): the first withheld kernel it reaches ends the worker at once,
    before the notebook's own code could catch the error and answer otherwise."""
    before, _Reach.lent = _Reach.lent, on
    try:
        yield
    finally:
        _Reach.lent = before


def _computes(key: str) -> bool:
    """Whether kernels under this dispatch key compute values (a backend's, or one registered
    for every backend), below where PyTorch's dispatch modes see a call. Kernels above it
    (autograd, vmap, autocast, decompositions) end in these, and the recorder's mode still
    sees which one a call reached before it raises."""
    computing = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
    above = ("Autograd", "Autocast")
    return key in computing or (key.endswith("CPU") and not key.startswith(above))


@functools.cache
def plan(profile: str) -> tuple[tuple[str, str, str], ...]:
    """(namespace, operator, dispatch key) of every kernel ``profile`` covers. Worked out
    once, by the zygote, before any worker exists (a worker only registers)."""
    import torch

    load_family()
    pattern = PROFILES[profile]
    found = []
    for qualified in torch._C._dispatch_get_all_op_names():
        namespace, _, name = qualified.partition("::")
        if not pattern.search(name):
            continue
        # The dispatcher's own account of the operator: a line "KEY: registered at ..." for
        # each key with a kernel, the keys no enumeration lists (MkldnnCPU) included.
        for line in torch._C._dispatch_dump(qualified).splitlines():
            key = line.partition(":")[0].removesuffix("[alias]").strip()
            if ": registered at" in line and _computes(key):
                found.append((namespace, name, key))
    return tuple(found)


def withhold(profile: str) -> int:
    """Replace every kernel ``profile`` covers by one that raises; how many were replaced.

    Called once, in a fresh worker, before any student code runs. Irreversible within the
    process (see the module's docstring)."""
    import torch

    libraries: dict[tuple[str, str], Any] = {}
    replaced = 0
    for namespace, name, key in plan(profile):
        with contextlib.suppress(RuntimeError, TypeError, ValueError):
            library = libraries.get((namespace, key))
            if library is None:
                library = torch._C._dispatch_library("IMPL", namespace, key, "", 0)
                libraries[namespace, key] = library
            kernel = f"{namespace}.{name.partition('.')[0]}, PyTorch's kernel"
            library.impl(name, key, _raiser(kernel), False)
            replaced += 1
    for library in libraries.values():
        # The registrations live while their handle does: keep it alive with no Python
        # object referring to it (see the module's docstring).
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(library))
    libraries.clear()
    return replaced + withhold_python(profile)


PYTHON_NAMES = {
    "softmax": re.compile(f"{SOFTMAX_OPS}|{ATTENTION_OPS}|multihead", re.IGNORECASE),
    "attention": re.compile(f"{ATTENTION_OPS}|multihead", re.IGNORECASE),
}
"""The same families among PyTorch's functions and classes written in Python: its
decompositions and references (``torch._decomp``, ``torch._refs``) compute a softmax from
``exp`` and ``sum``, ``nn.MultiheadAttention`` and flex attention's eager path an attention
from a softmax and matrix products, so no withheld kernel would see them."""
ENGINES = re.compile(
    r"static|fuse|fuser|fusion|texpr|tensorexpr|llga|^_te$|^_nativert$|^_aoti$|^_lazy", re.I
)
"""Entry points of ``torch._C`` that run a graph of operations with kernels of their own,
outside the dispatcher (Static Runtime, the TensorExpr and oneDNN fusers, the native and AOT
runtimes, lazy tensors): a withheld kernel is not withheld from them."""


PRELOADED = ("torch.onnx.ops", "torch.nn.attention.flex_attention")
"""PyTorch's public modules of the family that ``import torch`` does not load: loaded before
the plan, so that their functions are replaced with the rest."""


@functools.cache
def python_plan(profile: str) -> tuple[tuple[Any, Any], ...]:
    """(function, the code that replaces it) for the Python functions of PyTorch's loaded
    modules (and of its classes) whose names are of ``profile``'s family, worked out once in
    the zygote."""
    pattern = PYTHON_NAMES[profile]
    found: dict[int, Any] = {}
    for candidate in _named():
        if pattern.search(candidate.__name__):
            for function in _functions_of(candidate):
                # PyTorch's own code only (a class's helpers from typing are not)
                if str(function.__module__).startswith("torch"):
                    found[id(function)] = function
    return tuple((f, _raiser_code(f)) for f in found.values())


@functools.cache
def _named() -> tuple[Any, ...]:
    """The functions and classes of PyTorch's loaded modules, and the functions its objects
    hold: walked once for every profile (after load_family)."""
    import sys
    import types

    load_family()
    named = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("torch") or not isinstance(module, types.ModuleType):
            continue
        for value in list(vars(module).values()):
            for candidate in [value, *_held_functions(value)]:
                # Only functions and classes, whose names are plain attributes: another
                # object's lookup could run code (torch.backends.cuda's asks for a device).
                kind = type(candidate)
                if kind is types.FunctionType or issubclass(kind, type):
                    named.append(candidate)
    return tuple(named)


def load_family() -> None:
    """Load PRELOADED (before any plan: their kernels and functions are then covered)."""
    import importlib

    for name in PRELOADED:
        with contextlib.suppress(Exception):  # a PyTorch without it has nothing to replace
            importlib.import_module(name)


def _held_functions(value: Any) -> list[Any]:
    """Python functions a PyTorch object keeps in its own attributes (a custom operator's
    Python implementation, ``_init_fn``): callable past the operator."""
    import types

    if type(value).__module__.split(".")[0] != "torch" or isinstance(value, type):
        return []
    try:
        held = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return []
    return [v for v in list(held.values()) if type(v) is types.FunctionType]


def _functions_of(value: Any) -> list[Any]:
    """The Python functions behind ``value``: itself and what it wraps, or a class's methods."""
    import types

    if isinstance(value, type):  # its own methods: a base class (nn.Module) is not of it
        members = [getattr(m, "__func__", getattr(m, "fget", m)) for m in vars(value).values()]
        return [f for m in members if not isinstance(m, type) for f in _functions_of(m)]
    found = []
    while isinstance(value, types.FunctionType) and value not in found:
        found.append(value)
        value = getattr(value, "__wrapped__", None)
    return found


def _raiser_code(function: Any) -> Any:
    """Code that raises KernelWithheld naming ``function``, with as many free variables as
    its closure holds (a function's code can only be swapped for such code)."""
    names = [f"_cell{i}" for i in range(len(function.__code__.co_freevars))]
    what = f"{function.__module__}.{function.__qualname__}, PyTorch's code in Python"
    source = "def _outer():\n"
    source += "".join(f"    {n} = None\n" for n in names)
    source += "    def _withheld(*args, **kwargs):\n"
    source += "".join(f"        {n}\n" for n in names)
    source += (
        "        raise __import__('attnkit.student_process.withheld', "
        f"fromlist=['KernelWithheld'])._raiser({what!r})()\n"
    )
    source += "    return _withheld\n"
    scope: dict[str, Any] = {}
    exec(compile(source, "<withheld>", "exec"), scope)
    return scope["_outer"]().__code__


def withhold_python(profile: str) -> int:
    """Swap the code of every function python_plan finds, in place (every name and table
    that refers to one then raises), and take away the graph engines; how many were swapped."""
    swapped = 0
    for function, code in python_plan(profile):
        with contextlib.suppress(ValueError, TypeError):
            function.__code__ = code
            swapped += 1
    for owner, key, raiser in engine_plan():
        with contextlib.suppress(AttributeError, TypeError):
            setattr(owner, key, raiser)
    return swapped


def pin_replaced(profile: str) -> None:
    """In the zygote, once: raise by one the count of references of each code object a
    worker's withholding swaps out, with no Python object referring to it, as for the
    kernels' handles above.

    Why: in a worker, the swap dropped the last reference and freed the code, writing to
    every page it and what it holds sit on, each a page the worker first had to copy from
    the zygote: about 1,000 pages and 3 ms a worker. Pinned, nothing is freed, and no
    Python route reaches it: no object refers to it, and the collector does not track code
    objects. (The graph engines' members are not pinned: the collector tracks them.) Code
    that rebuilds PyTorch's Python functions anyway, from their source files, their cached
    bytecode or raw memory, gets functions that compute from elementary kernels: the
    withheld kernels stay withheld, and the kernel note names what they reached."""
    import gc

    for function, _ in python_plan(profile):
        if not gc.is_tracked(function.__code__):
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(function.__code__))


@functools.cache
def engine_plan() -> tuple[tuple[Any, str, Any], ...]:
    """(owner, attribute, what replaces it) for every function of the graph engines (ENGINES):
    the engine's own name in ``torch._C``, and each function of an engine's module or class
    (and of a module's classes), so that the engine found any other way (the module in
    ``sys.modules``, the class among ``object.__subclasses__()``) runs nothing. Worked out
    once, by the zygote."""
    import torch

    found: list[tuple[Any, str, Any]] = []
    for name in [n for n in dir(torch._C) if ENGINES.search(n)]:
        engine = getattr(torch._C, name)
        if isinstance(engine, type | types.ModuleType):  # kept, emptied: others import it
            found += _members(engine, f"torch._C.{name}")
        elif callable(engine):
            found.append((torch._C, name, _raiser(f"torch._C.{name}, PyTorch's graph engine")))
    return tuple(found)


def _members(owner: Any, label: str, depth: int = 0) -> list[tuple[Any, str, Any]]:
    found = []
    for key, member in list(vars(owner).items()):
        if key.startswith("__") and key not in ("__init__", "__call__"):
            continue
        if isinstance(member, type) and isinstance(owner, types.ModuleType) and depth == 0:
            found += _members(member, f"{label}.{key}", depth + 1)
        elif callable(member) and not isinstance(member, type):
            found.append((owner, key, _raiser(f"{label}.{key}, PyTorch's graph engine")))
    return found


GUARDED_EVENTS = ("gc.get_objects", "gc.get_referrers", "gc.get_referents")
FOREIGN_INTERFACES = frozenset({"_cffi_backend", "cffi", "numba", "llvmlite", "cppyy"})
"""Modules that call native code without the audit events ``ctypes`` raises."""


def guard(profile: str) -> None:
    """An audit hook, which nothing in the process can remove, that refuses what would run
    library code around the withheld kernels: foreign calls (``ctypes``, and importing
    another foreign function interface), raw memory (this process's ``/proc/.../mem``), the
    collector's lists of live objects, and native code the submission wrote (an extension
    module loaded from its scratch folders, or made or changed since the worker started):
    any of these could call PyTorch's kernels directly, past the dispatcher."""
    import os
    import sys
    import time

    started = time.time() - 1
    # Its own folder; in the bubblewrap sandbox (the zygote is PID 1) all of /tmp and /dev/shm
    # are this submission's too. Elsewhere they may hold the kit's own environment.
    private = ("/tmp", "/dev/shm") if os.getppid() == 1 else ()
    scratch = tuple(os.path.realpath(p) + os.sep for p in (*private, os.getcwd()))

    def refuse(event: str, args: tuple[Any, ...]) -> None:
        if event.startswith("ctypes.") or event in GUARDED_EVENTS:
            raise PermissionError(f"{event} is not available where kernels are withheld")
        if event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
            path = os.path.realpath(os.fsdecode(args[0]))
            if path.startswith("/proc/") and path.endswith("/mem"):
                raise PermissionError(f"{path} is not readable where kernels are withheld")
        if event == "import" and args and isinstance(args[0], str):
            if args[0].partition(".")[0] in FOREIGN_INTERFACES:
                raise PermissionError(f"{args[0]} is not available where kernels are withheld")
            # The event names a file only when an extension module is loaded.
            if len(args) > 1 and isinstance(args[1], str) and _own(args[1], started, scratch):
                raise PermissionError(f"{args[1]}: native code the notebook wrote is not loaded")

    sys.addaudithook(refuse)


def _own(path: str, started: float, scratch: tuple[str, ...]) -> bool:
    """Whether the extension module at ``path`` may be the worker's own: in its scratch
    folders, or made or changed since it started (or not there to look at)."""
    import os

    real = os.path.realpath(path)
    try:
        return real.startswith(scratch) or os.stat(real).st_mtime >= started
    except OSError:
        return True
