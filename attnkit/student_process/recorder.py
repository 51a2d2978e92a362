"""The recorder: which library calls an exercise's code really made, seen from inside the
student's process (the sandbox's worker, or the notebook itself for the self-check).

Only runtime evidence costs points. While an exercise's code runs, :class:`Recorder`
watches PyTorch at two levels:

* the *function* level (a ``TorchFunctionMode``): ``torch.softmax``, ``F.softmax``,
  ``x.softmax``, ``F.scaled_dot_product_attention``, ``F.multi_head_attention_forward``
  (what ``nn.MultiheadAttention`` runs), however the function was named or aliased;
* the *dispatch* level (a ``TorchDispatchMode``): every ATen kernel reached, whatever
  Python name led there: ``torch._softmax``, ``log_softmax(...).exp()``,
  ``torch.ops.aten._softmax``, the ``_scaled_dot_product_*`` family.

A student who defeats the recorder has to write code that reaches into the kit, which the
static scan notes for the instructor.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

SOFTMAX_KERNELS = frozenset(
    {
        "aten._softmax",
        "aten.softmax",
        "aten._log_softmax",
        "aten.log_softmax",
        "aten._safe_softmax",
        "aten.special_softmax",
        "aten.special_log_softmax",
    }
)
ATTENTION_KERNELS = frozenset(
    {
        "aten.scaled_dot_product_attention",
        "aten._scaled_dot_product_attention_math",
        "aten._scaled_dot_product_flash_attention",
        "aten._scaled_dot_product_flash_attention_for_cpu",
        "aten._scaled_dot_product_efficient_attention",
        "aten._scaled_dot_product_cudnn_attention",
        "aten._scaled_dot_product_fused_attention_overrideable",
        "aten._safe_softmax",
        "aten._native_multi_head_attention",
        "aten._transformer_encoder_layer_fwd",
    }
)

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
# A fused attention kernel computes a softmax in one step too (one query over n keys,
# with identity values, returns softmax of the keys' scores): where a softmax is to be
# written by hand, every attention kernel is forbidden with it.
SOFTMAX_FAMILY = (
    SOFTMAX_FUNCTIONS + ATTENTION_FUNCTIONS,
    SOFTMAX_KERNELS | ATTENTION_KERNELS,
    SOFTMAX_PATTERNS + ATTENTION_PATTERNS,
)
ATTENTION_FAMILY = (ATTENTION_FUNCTIONS, ATTENTION_KERNELS, ATTENTION_PATTERNS)
FAMILIES: dict[str, tuple[tuple[str, ...], frozenset[str], tuple[str, ...]]] = {
    "torch.softmax": SOFTMAX_FAMILY,
    "torch.nn.functional.softmax": SOFTMAX_FAMILY,
    "torch.Tensor.softmax": SOFTMAX_FAMILY,
    "scipy.special.softmax": SOFTMAX_FAMILY,
    "torch.nn.functional.scaled_dot_product_attention": ATTENTION_FAMILY,
    "torch.nn.MultiheadAttention": ATTENTION_FAMILY,
}  # fmt: skip


_RESOLVED: dict[str, Any] = {}


def _resolve(path: str) -> Any:
    """The function ``path`` names, if its library is loaded (None otherwise).

    A library is watched once something has loaded it: in the grading sandbox the zygote
    loads PyTorch before any submission runs, so every call is watched there; a student's
    own check of a NumPy lesson does not load PyTorch just to watch it."""
    import importlib
    import sys

    if path in _RESOLVED:
        return _RESOLVED[path]
    parts = path.split(".")
    if parts[0] not in sys.modules:
        return None  # looked for again once something loads the library
    found: Any = None
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner: Any = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for part in parts[split:]:
            owner = getattr(owner, part, None)
            if owner is None:
                break
        found = owner
        break
    _RESOLVED[path] = found  # the library is loaded: a name it lacks stays missing
    return found


def _where() -> str:
    """ " (code cell N, line M)" for the innermost notebook frame on the stack, if any."""
    import sys

    from ..notebook_run import cell_of

    frame = sys._getframe(1)
    while frame is not None:
        cell = cell_of(frame.f_code.co_filename)
        if cell is not None:
            return f" (code cell {cell}, line {frame.f_lineno})"
        frame = frame.f_back
    return ""


@dataclass(frozen=True)
class _Watched:
    """What a recorder watches for one set of forbidden calls."""

    kernels: frozenset[str]
    patterns: tuple[str, ...]
    functions: dict[Any, str]
    """The forbidden functions found, by object (see _resolve: once found, kept)."""
    waiting: tuple[str, ...]
    """The paths whose library was not loaded yet: looked for again by each recorder."""
    verdicts: dict[Any, tuple[bool, str | None]]
    """Each kernel met so far: see Recorder.kernel_verdict."""


@functools.cache
def _watched(forbidden: tuple[str, ...]) -> _Watched:
    functions: set[str] = set()
    kernels: set[str] = set()
    patterns: set[str] = set()
    for name in forbidden:
        family = FAMILIES.get(name, ((name,), frozenset(), ()))
        functions.update(family[0])
        kernels.update(family[1])
        patterns.update(family[2])
    import sys

    found = _found(sorted(functions))
    waiting = tuple(p for p in sorted(functions) if p.split(".")[0] not in sys.modules)
    return _Watched(frozenset(kernels), tuple(sorted(patterns)), found, waiting, {})


def _found(paths: Iterable[str]) -> dict[Any, str]:
    """The functions of ``paths`` that resolve now (see _resolve), by object."""
    resolved = [(path, _resolve(path)) for path in paths]
    return {target: path for path, target in resolved if target is not None}


class _Canary:
    running = False
    """A recorder's canary is running: the softmax it asks for is the kit's own, which a
    withheld kernel neither counts nor ends a lent call for (see withheld.py)."""


def canary_running() -> bool:
    return _Canary.running


def torch_loaded() -> bool:
    import sys

    return "torch" in sys.modules


HOOKS = "_hooks"
"""Where a recorder class keeps its two hook classes (see Recorder.hook_classes)."""


class Recorder:
    """Record the forbidden functions and kernels reached inside the ``with`` block.

    ``used`` holds one entry per finding, e.g. ``"torch.log_softmax (code cell 3, line
    5)"`` or ``"aten._softmax, PyTorch's kernel"``. The calls still run: the grader turns
    a finding into a ``forbidden`` verdict, the self-check into a failed check.
    """

    def __init__(self, forbidden: Iterable[str]) -> None:
        self.used: dict[str, None] = {}  # in the order seen: the function before its kernel
        watched = _watched(tuple(sorted(forbidden)))
        self.kernels, self.patterns, self.functions = (
            watched.kernels,
            watched.patterns,
            watched.functions,
        )
        late = _found(watched.waiting)  # a library loaded since is watched from now on
        if late:
            self.functions = {**self.functions, **late}
        self._verdicts = watched.verdicts
        self.canaries = {"asked": 0, "function": 0, "kernel": 0}
        self._in_canary: Any = None
        self._tampered = False
        self._foreign_types = False
        self._modes: list[Any] = []
        self.reached: set[Any] = set()
        """Every kernel the exercise reached (see kernel_names)."""
        self._watching = False
        """Whether the modes were entered (PyTorch was loaded): the canaries need them."""

    def check_types(self, types: Any) -> None:
        """A tensor type of the notebook's own (a subclass with ``__torch_function__`` or
        ``__torch_dispatch__``) runs its handler while PyTorch has taken the recorder's
        modes off their stack: what that code calls, the recorder cannot see."""
        for kind in types:
            if not getattr(kind, "__module__", "").startswith("torch"):
                self._foreign_types = True

    def kernel_verdict(self, func: Any) -> tuple[bool, str | None]:
        """(whether the kernel computes a softmax, its name if it is forbidden here),
        worked out once per kernel."""
        verdict = self._verdicts.get(func)
        if verdict is None:
            name = str(func.overloadpacket)
            forbidden = name in self.kernels or any(p in name for p in self.patterns)
            verdict = (any(p in name for p in SOFTMAX_PATTERNS), name if forbidden else None)
            self._verdicts[func] = verdict
        return verdict

    def __enter__(self) -> Recorder:
        if not (self.kernels or self.functions) or not torch_loaded():
            return self
        functions, kernels = type(self).hook_classes()
        for mode in (functions(self), kernels(self)):
            try:
                mode.__enter__()
            except BaseException:  # take off what was pushed: no hook outlives the recorder
                self.__exit__()
                raise
            self._modes.append(mode)
        self._watching = True
        return self

    @classmethod
    def hook_classes(cls) -> tuple[Any, Any]:
        """The two hook classes of this recorder class, made at its first use (PyTorch must
        be loaded), and made again whenever they are no longer as made.

        Made per call, they cost 50 us a call and left two classes for the collector each
        time. Kept, they can be found (``TorchFunctionMode.__subclasses__()``) and changed
        between calls: so each use first checks that each class holds exactly what it was
        made with (the very same objects: attributes, bases, functions, their code, defaults
        and closures), and a changed one is replaced, as a class made for the call would
        have been. A copy of the class (implementation.recorded_caller) makes its own when
        it is made, before any student code runs."""
        made = cls.__dict__.get(HOOKS)
        if made is None or not cls._as_made(made):
            classes = cls._make_hook_classes()
            made = tuple((c, cls._parts(c)) for c in classes)
            type.__setattr__(cls, HOOKS, made)
        return made[0][0], made[1][0]

    @staticmethod
    def _parts(hook: Any) -> tuple[Any, ...]:
        """Everything ``hook`` runs with, each to be compared by identity: its metaclass and
        bases, each attribute, and for each function (a classmethod's too) its code,
        defaults and the contents of its closure's cells."""
        parts: list[Any] = [type(hook), *hook.__bases__, len(vars(hook))]
        for name, value in vars(hook).items():
            parts += [name, value]
            function = getattr(value, "__func__", value)
            if callable(function) and hasattr(function, "__code__"):
                parts += [function, function.__code__, function.__defaults__]
                parts += [function.__kwdefaults__, len(function.__closure__ or ())]
                parts += [cell.cell_contents for cell in function.__closure__ or ()]
        return tuple(parts)

    @classmethod
    def _as_made(cls, made: Any) -> bool:
        for hook, parts in made:
            now = cls._parts(hook)
            if len(now) != len(parts) or any(a is not b for a, b in zip(now, parts, strict=True)):
                return False
        return True

    @staticmethod
    def _make_hook_classes() -> tuple[Any, Any]:
        import torch
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        class Functions(TorchFunctionMode):
            def __init__(self, recorder: Recorder) -> None:
                super().__init__()
                self.recorder = recorder

            def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                recorder = self.recorder
                recorder.check_types(types)
                name = recorder.functions.get(func)
                if recorder._in_canary:
                    recorder.canaries["function"] += func is recorder._in_canary
                elif name is not None:
                    recorder.used.setdefault(name + _where())
                return func(*args, **(kwargs or {}))

        class Kernels(TorchDispatchMode):
            def __init__(self, recorder: Recorder) -> None:
                super().__init__()
                self.recorder = recorder

            @classmethod
            def _should_skip_dynamo(cls) -> bool:
                # PyTorch would wrap __torch_dispatch__ to keep torch.compile out of it,
                # which imports torch._dynamo (seconds) at the first call. Nothing is
                # compiled here, so the hook stays a plain function.
                return False

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
                recorder = self.recorder
                recorder.check_types(types)
                softmax, forbidden = recorder.kernel_verdict(func)
                if recorder._in_canary:
                    recorder.canaries["kernel"] += softmax
                    if softmax:  # seen: its value is never read, so it is not computed
                        return torch.empty_like(args[0])
                    return func(*args, **(kwargs or {}))
                recorder.reached.add(func)
                if forbidden is not None:
                    recorder.used.setdefault(f"{forbidden}, PyTorch's kernel{_where()}")
                return func(*args, **(kwargs or {}))

        return Functions, Kernels

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
        if not (self.kernels or self.patterns) or not self._watching:
            return  # nothing to watch, or PyTorch was not loaded when the exercise started
        import torch

        self.canaries["asked"] += 1
        self._in_canary = torch.softmax  # the function the modes must see, while it runs
        before, _Canary.running = _Canary.running, True
        try:
            torch.softmax(torch.zeros(2), 0)
        except RuntimeError:
            pass  # a worker without the softmax kernel (see withheld.py): the modes saw it
        finally:
            self._in_canary = None
            _Canary.running = before

    def kernel_names(self) -> list[str]:
        """The kernels the exercise reached, by name (``aten.mm``): the grader compares them
        with those honest answers reach."""
        return sorted({str(func.overloadpacket) for func in self.reached})

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
        if self._foreign_types:
            return (
                "the check that it calls no library softmax or attention could not run: a "
                "tensor type the notebook defines (a torch.Tensor subclass with its own "
                "__torch_function__ or __torch_dispatch__) runs code the check cannot see; "
                "use plain tensors"
            )
        return None
