"""Kernels withheld: a worker in which PyTorch has no softmax (or no fused attention) at all.

The recorder (:mod:`.recorder`) watches from inside the submission's process, so code
written against it can switch PyTorch's hooks off for the length of one call, or walk the
frames to its findings. This module proves "from scratch" another way, one that nothing in
the process can undo: before any student code runs, the worker replaces every kernel of the
forbidden family, in every namespace and under every dispatch key that computes values,
by a kernel that raises :class:`KernelWithheld`. An exercise graded in such a worker either
computes its answer from other kernels, which is what the lesson asks for, or fails.

Why nothing in the process can undo it:

* a registration lasts as long as the handle PyTorch returned for it; the handle's count of
  references is raised once and the handle dropped, so no Python object refers to it and the
  collector (which does not track it) cannot list it: nothing can deregister the withheld
  kernels, and so bring back the originals;
* a kernel registered later for the same key shadows the withheld one, but it is the
  notebook's own code (from scratch, then); none can call the kernel it shadows;
* guards, ``redispatch`` and switched-off modes only choose among registered kernels.

Which family is withheld is the grader's choice, per exercise (see :data:`PROFILES`): an
exercise that may use a library softmax (lesson 2's attention classes) runs where only the
fused attention kernels are withheld.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import re
from typing import Any

SOFTMAX_OPS = r"softmax"
ATTENTION_OPS = r"attention|sdpa|multi_head|transformer_encoder|_safe_softmax"
PROFILES = {
    # A fused attention kernel computes a softmax in one step too (one query over n keys,
    # identity values): where the softmax is to be written by hand, both are withheld.
    "softmax": re.compile(f"{SOFTMAX_OPS}|{ATTENTION_OPS}"),
    "attention": re.compile(ATTENTION_OPS),
}
"""The grader's names for what a worker withholds, and the kernel names (after the
namespace) each covers. A kernel PyTorch adds later with such a name is covered too."""

WITHHELD_TYPE = "KernelWithheld"
"""The name the grader reads in a withheld kernel's error (a notebook could raise one of
its own name: that only fails its own exercise)."""


class KernelWithheld(RuntimeError):
    """A kernel this worker does not have: the exercise must compute without it."""


def _raiser(op: str) -> Any:
    def withheld(*args: Any, **kwargs: Any) -> Any:
        from .recorder import _where

        # Named as the recorder names a kernel, with the notebook's cell and line.
        raise KernelWithheld(f"{op}, PyTorch's kernel{_where()}")

    return withheld


def _withheld_function(*args: Any, **kwargs: Any) -> Any:
    # Runs with the globals of the library function whose code it replaced: only builtins.
    withheld = __import__("attnkit.student_process.withheld", fromlist=["KernelWithheld"])
    raise withheld.KernelWithheld("a library attention is not available here")


PYTHON_FUNCTIONS = {
    "softmax": ("torch.nn.functional", "multi_head_attention_forward"),
    "attention": ("torch.nn.functional", "multi_head_attention_forward"),
}
"""Library functions written in Python that compute an attention from kernels that stay
(``nn.MultiheadAttention`` asked for its weights runs a softmax and matrix products): their
code is replaced in place, so every name that refers to them raises."""


def _computes(key: str) -> bool:
    """Whether kernels under this dispatch key compute values (a backend's, or one registered
    for every backend), below where PyTorch's dispatch modes see a call. Kernels above it
    (autograd, vmap, autocast, decompositions) end in these, and the recorder's mode still
    sees which one a call reached before it raises."""
    computing = ("CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
    return key in computing or (
        key.endswith("CPU") and not key.startswith(("Autograd", "Autocast"))
    )


@functools.cache
def plan(profile: str) -> tuple[tuple[str, str, str], ...]:
    """(namespace, operator, dispatch key) of every kernel ``profile`` covers. Worked out
    once, by the zygote, before any worker exists (a worker only registers)."""
    import torch

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
    import importlib

    import torch

    libraries: dict[tuple[str, str], Any] = {}
    replaced = 0
    for namespace, name, key in plan(profile):
        with contextlib.suppress(RuntimeError, TypeError, ValueError):
            library = libraries.get((namespace, key))
            if library is None:
                library = torch._C._dispatch_library("IMPL", namespace, key, "", 0)
                libraries[namespace, key] = library
            library.impl(name, key, _raiser(f"{namespace}.{name.partition('.')[0]}"), False)
            replaced += 1
    for library in libraries.values():
        # The registrations live while their handle does: keep it alive with no Python
        # object referring to it (see the module's docstring).
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(library))
    libraries.clear()
    module_name, function_name = PYTHON_FUNCTIONS[profile]
    function = getattr(importlib.import_module(module_name), function_name)
    function.__code__ = _withheld_function.__code__
    return replaced
