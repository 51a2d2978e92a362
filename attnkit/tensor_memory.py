"""What one call holds in memory, seen from inside the process that runs it.

:class:`MemoryWatch` watches one call of an exercise: every tensor a PyTorch kernel makes
(a dispatch mode sees each kernel's outputs, and how big a storage each one has), the
tensors alive at once (each output until the collector frees it), and the peak of what
NumPy allocates (``tracemalloc``, which NumPy reports its arrays to). With a ``limit``, the
first tensor made bigger than the limit, or a NumPy peak above it, ends the call with
:class:`HeldTooMuch`, a ``MemoryError`` naming the kernel, the shape and the notebook line.

This is the detail, never the verdict, wherever the student's code runs with it: code in
the same process can switch any of it off. The grader's verdict on memory comes from
outside the process (an address-space limit the sandbox's zygote sets before any of the
notebook's code runs: see docs/security.md). In the student's own notebook, and where the
kit grades in-process (nbgrader's kernel, mutation testing), the watch stands in for that
limit.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any

MIB = 1024**2


class HeldTooMuch(MemoryError):
    """A call made a tensor (or NumPy arrays) bigger than the memory it may hold."""


def mib(count: float) -> str:
    return f"{count / MIB:.1f} MiB" if count < 10 * MIB else f"{count / MIB:.0f} MiB"


def _where() -> str:
    """' (code cell N, line M)' for the innermost notebook frame on the stack, else ' (line
    M of FILE)' for the innermost frame outside PyTorch and the kit, else ''."""
    from .notebook_run import cell_of

    frame = sys._getframe(1)
    fallback = ""
    while frame is not None:
        filename = frame.f_code.co_filename
        cell = cell_of(filename)
        if cell is not None:
            return f" (code cell {cell}, line {frame.f_lineno})"
        outside = not any(part in filename for part in ("torch", "attnkit", "contextlib"))
        if not fallback and outside:
            fallback = f" (line {frame.f_lineno} of {filename.rsplit('/', 1)[-1]})"
        frame = frame.f_back
    return fallback


_MODE: list[Any] = []


def _mode_class() -> Any:
    """The dispatch mode's class, made once PyTorch is loaded (this module never loads it)."""
    if _MODE:
        return _MODE[0]
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    tensor = torch.Tensor

    class Sizes(TorchDispatchMode):
        def __init__(self, watch: MemoryWatch) -> None:
            super().__init__()
            self.watch = watch

        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            return False  # see the recorder: nothing is compiled here

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            try:
                out = func(*args, **(kwargs or {}))
            except RuntimeError as exc:
                if "allocate" not in str(exc):
                    raise
                raise HeldTooMuch(
                    f"{func.overloadpacket} could not allocate memory{_where()}: "
                    f"{str(exc).splitlines()[0][:160]}"
                ) from None
            if isinstance(out, tensor):
                self.watch.made(out, func)
            elif isinstance(out, tuple | list):
                for item in out:
                    if isinstance(item, tensor):
                        self.watch.made(item, func)
            return out

    _MODE.append(Sizes)
    return Sizes


def address_space_limited() -> bool:
    """Whether the kernel bounds this process's address space (the grading sandbox's
    workers): there it, not the watch, stops a call that maps too much."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a POSIX system
        return False
    return resource.getrlimit(resource.RLIMIT_AS)[1] != resource.RLIM_INFINITY


class MemoryWatch:
    """Watch the memory of the code run inside ``with``; ``limit`` (bytes) ends it when it
    makes a bigger tensor, or NumPy's peak exceeds it.

    ``largest`` is the biggest tensor made (bytes, and what made it); with ``live``, ``peak``
    is the most bytes of tensors made here alive at once (each output until the collector
    frees it); ``numpy_peak`` is NumPy's (and Python's) peak of new allocations, from
    ``tracemalloc``, watched unless ``numpy`` is False (by default, wherever the kernel
    does not bound the process's address space: see :func:`address_space_limited`)."""

    def __init__(
        self, limit: int | None = None, live: bool = False, numpy: bool | None = None
    ) -> None:
        self.limit = limit
        self.live_too = live
        self.numpy = not address_space_limited() if numpy is None else numpy
        self.largest = 0
        self.largest_what = ""
        self.live = 0
        self.peak = 0
        self.numpy_peak = 0
        self._seen: dict[int, int] = {}
        self._mode: Any = None
        self._tracing = False
        self._start = 0

    # -- PyTorch's side ------------------------------------------------------------------------

    def made(self, tensor: Any, func: Any) -> None:
        """One output of a kernel: the largest so far? (and, with ``live``, count its
        storage once, while it lives)."""
        storage = tensor.untyped_storage()
        size = storage.nbytes()
        if size > self.largest:
            self.largest = size
            shape = list(tensor.shape)
            self.largest_what = f"{func.overloadpacket} made a {shape} tensor of {mib(size)}"
            if self.limit is not None and size > self.limit:
                raise HeldTooMuch(
                    f"{self.largest_what}{_where()}, more than the {mib(self.limit)} this call "
                    "may hold"
                )
        key = storage.data_ptr()
        if not self.live_too or key in self._seen or not size:
            return  # a view of a storage counted already (or of an input)
        self._seen[key] = size
        self.live += size
        self.peak = max(self.peak, self.live)
        weakref.finalize(tensor, self._freed, key)

    def _freed(self, key: int) -> None:
        self.live -= self._seen.pop(key, 0)

    # -- the block -----------------------------------------------------------------------------

    def __enter__(self) -> MemoryWatch:
        if self.numpy:
            import tracemalloc

            self._tracing = not tracemalloc.is_tracing()
            if self._tracing:
                tracemalloc.start()
            tracemalloc.reset_peak()
            self._start = tracemalloc.get_traced_memory()[0]
        if "torch" in sys.modules:
            self._mode = _mode_class()(self)
            self._mode.__enter__()
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        if not self.numpy:
            return
        import tracemalloc

        self.numpy_peak = max(tracemalloc.get_traced_memory()[1] - self._start, 0)
        if self._tracing:
            tracemalloc.stop()
        if kind is None and self.limit is not None and self.numpy_peak > self.limit:
            raise HeldTooMuch(
                f"the call's NumPy arrays reached {mib(self.numpy_peak)} at once, more than "
                f"the {mib(self.limit)} it may hold"
            )

    def report(self) -> dict[str, Any]:
        """What the watch saw, as plain data."""
        return {
            "largest": self.largest,
            "largest_what": self.largest_what[:200],
            "peak": max(self.peak, self.numpy_peak),
        }


OUT_OF_MEMORY = ("MemoryError", "HeldTooMuch", "_ArrayMemoryError", "OutOfMemoryError")
"""What a call that ran out of memory raises: Python's and NumPy's errors, the watch's."""
ALLOCATOR = ("can't allocate memory", "not enough memory", "could not allocate memory")
"""What PyTorch's allocator says (a RuntimeError) when the process may map no more."""


def out_of_memory(raised: str | None, message: str | None) -> bool:
    """Whether a call that raised ``raised`` (its type's name) saying ``message`` ran out of
    memory: the sandbox's limit, or the watch's."""
    if raised in OUT_OF_MEMORY:
        return True
    return raised == "RuntimeError" and any(words in (message or "") for words in ALLOCATOR)
