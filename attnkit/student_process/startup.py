"""The zygote's start-up: what it does once, before any worker exists, so that no worker
pays for it (see :mod:`.zygote`).

* :func:`preload` imports what every submission needs, works out the withheld kernels'
  plans, and runs each first use that would otherwise cost every worker again: IPython's
  first cell, the recorder's first calls of each operation attention code uses;
* :func:`into_huge_pages` backs the zygote's private memory with 2 MiB pages, so that a
  worker's fork and exit handle one page-table entry where they handled 512 (the zygote
  calls it once it has forked enough workers for it to pay: see zygote.HUGE_PAGES_AFTER).
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def frozen_when_loaded() -> Iterator[None]:
    """Python's recipe for a process that forks (the zygote, the graders' server): the
    collector is off while the block loads, and what it made is then frozen out of the
    collector's reach for good, so that no child walks those objects again or copies their
    pages by writing to their headers.

    Left on, the collector walks the quarter of a million objects importing PyTorch makes
    several times (0.3 to 0.4 s). The garbage the imports leave is frozen with the rest,
    uncollected: collecting it first cost 0.1 to 0.16 s of every start, for memory every
    child shares."""
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def preload(plots: bool = True) -> None:
    """Import what every submission needs once, before any fork; matplotlib too if
    ``plots`` (some submission names it)."""
    if plots:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot
    import numpy  # noqa: F401
    import pyseccomp  # noqa: F401
    import torch

    torch.set_num_threads(1)
    from .. import adapters, notebook, notebook_run  # noqa: F401
    from . import recorder, withheld

    warm_shell(notebook_run)
    for profile in withheld.PROFILES:  # each worker then only registers (withheld.withhold)
        withheld.plan(profile)
        withheld.python_plan(profile)
        withheld.pin_replaced(profile)
    withheld.engine_plan()
    warm_recorder(recorder, adapters)
    try:
        from attnkit_data import gpt2_tokenizer

        gpt2_tokenizer()
    except Exception:  # the lessons' own cells report a missing tokenizer
        pass


MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25
HUGE_PAGE = 2 << 20
"""A huge page's size where the kernel does not say (x86-64's)."""
THP_SETTINGS = "/sys/kernel/mm/transparent_hugepage"


def thp_files(size: int = HUGE_PAGE) -> tuple[str, ...]:
    """The administrator's settings the zygote reads (the sandbox shows these files alone,
    read-only): whether huge pages are on, their size, and the switch for that size."""
    return ("enabled", "hpage_pmd_size", f"hugepages-{size // 1024}kB/enabled")


def _read(path: str) -> str | None:
    try:
        with open(path) as setting:
            return setting.read()
    except (OSError, UnicodeDecodeError):
        return None


def huge_page_size(settings: str = THP_SETTINGS) -> int:
    """The size of the huge pages the zygote may ask for; 0 where the administrator turned
    them off ("never", for all sizes or for this one), which MADV_COLLAPSE would not
    otherwise honour. Settings not shown: the kernel refuses by itself if it has none."""
    said = (_read(os.path.join(settings, "hpage_pmd_size")) or "").strip()
    size = int(said) if said.isdigit() and int(said) > 0 else HUGE_PAGE
    chosen = _read(os.path.join(settings, thp_files(size)[2])) or "[inherit]"
    if "[inherit]" in chosen:
        chosen = _read(os.path.join(settings, "enabled")) or ""
    return 0 if "[never]" in chosen else size


def into_huge_pages(maps: str = "/proc/self/maps", settings: str = THP_SETTINGS) -> int:
    """Back the zygote's private memory (its heap and anonymous mappings: PyTorch's tables,
    Python's objects, the shared cells' values) with huge pages (2 MiB) where the kernel can;
    the bytes so backed.

    Why: each fork copies, and each worker's exit tears down, one page-table entry per
    4 KiB page of the zygote's 250 MiB or so, up to 10 ms a worker; a huge page is one
    entry. A worker's first write to a shared huge page still copies 4 KiB only: the kernel
    splits the page in that worker. Best effort: a kernel without MADV_COLLAPSE (before
    6.1), or an administrator who turned transparent huge pages off, leaves the memory as
    it was."""
    import ctypes

    huge = huge_page_size(settings)
    if not huge:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    backed = 0
    try:
        with open(maps) as listing:
            regions = [line.split() for line in listing]
    except OSError:  # no /proc: the memory stays as it is
        return 0
    for fields in regions:
        if len(fields) < 5 or fields[1] != "rw-p" or fields[5:] not in ([], ["[heap]"]):
            continue  # only private, writable, anonymous memory (files' pages are shared)
        try:
            start, end = (int(x, 16) for x in fields[0].split("-"))
        except ValueError:
            continue
        start = -(-start // huge) * huge
        end = end // huge * huge
        if end - start >= huge:
            libc.madvise(start, end - start, MADV_HUGEPAGE)
            if libc.madvise(start, end - start, MADV_COLLAPSE) == 0:
                backed += end - start
    return backed


WARM_UP_CELL = "def f(x: int) -> int:\n    return x\n\n\nclass A:\n    pass\n"
WARM_UP_MODULES = (
    "bdb",  # IPython's first cell: its debugger and logger
    "IPython.core.logger",
    "pygments.formatters.terminal256",  # a cell's first error: the traceback's highlighter
    "pygments.styles",
    "torch._subclasses.schema_check_mode",  # PyTorch, on a demo's first mode switch
)
"""What every worker would otherwise load on its first cell, first error or first demo."""


def warm_shell(notebook_run: Any) -> None:
    """Load WARM_UP_MODULES and run one cell in a namespace thrown away afterwards: nothing
    of it is left for a worker (no error, no displayed value, no debugger state)."""
    import importlib

    for name in WARM_UP_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    shell = notebook_run.kernel_shell()
    notebook_run.fresh_namespace(shell)
    notebook_run.run_cell(shell, notebook_run.Cell(0, WARM_UP_CELL))


def warm_recorder(recorder: Any, adapters: Any) -> None:
    """Call a small layer and the operations attention code uses through the adapters,
    forward and backward, under a recorder for each set of calls the lessons forbid (and
    for all of them). The recorder's first use imports PyTorch's mode machinery (seconds), and its
    first call of each operation builds PyTorch's tables for it (the operation's Python
    object, its dispatch cache, the recorder's verdict on it): about 4 ms a worker, paid
    here once. The random state is put back as it was, so each worker's is a fresh
    kernel's."""
    import numpy as np
    import torch

    from ..assignments import ASSIGNMENTS
    from .shared_cells import random_state, set_random_state

    forbidden = {tuple(sorted(e.forbidden)) for a in ASSIGNMENTS.values() for e in a.exercises}
    namespace = {"Layer": _layer_class(), "operations": _operations}
    x = np.linspace(-1, 1, 2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    saved = random_state()
    for names in sorted(forbidden | {tuple(sorted(recorder.FAMILIES))}):
        try:
            with recorder.Recorder(names) as watching:
                watching.canary()
                adapters.call_function(namespace, "operations", [x], framework="torch")
                adapters.run_module(
                    namespace, "Layer", [4], [x], train=True, grad_output=np.ones_like(x)
                )
                watching.canary()
                watching.kernel_names()
        except Exception as exc:  # a warm-up only: each worker then pays for its first calls
            print(f"attnkit: the recorder's warm-up for {names} failed: {exc!r}", file=sys.stderr)
        finally:
            set_random_state(saved)
    # Every worker is forked from this state: a hook left on PyTorch's stacks would watch
    # every notebook's calls. The zygote stops rather than fork from it.
    if torch._C._len_torch_function_stack() or torch._C._len_torch_dispatch_stack():
        raise RuntimeError("the recorder's warm-up left a hook on PyTorch's stacks")


def _operations(x: Any) -> Any:
    """One use of each operation the lessons' answers use: a warm-up, not an exercise."""
    import torch

    mask = torch.triu(torch.ones(x.shape[-2], x.shape[-2]), diagonal=1).bool()
    pairs = (x @ x.transpose(-2, -1) / x.shape[-1] ** 0.5).masked_fill(mask, float("-inf"))
    kept = torch.where(torch.isfinite(pairs), pairs, torch.zeros_like(pairs))
    parts = [pairs.amax(-1, keepdim=True).detach(), kept.exp(), kept.sum(-1, keepdim=True)]
    return sum(part.sum() for part in parts) / 3 + (kept @ x).view(*x.shape).contiguous()


def _layer_class() -> Any:
    """A layer with the parts the lessons' modules hold (parameters, projections, dropout,
    a buffer), calling the operations above and the library's own softmax and attention
    (which a worker may lack)."""
    import torch
    from torch import nn

    class Layer(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.rand(d, d))
            self.first = nn.Linear(d, d, bias=False)
            self.second = nn.Linear(d, d, bias=True)
            self.dropout = nn.Dropout(0.1)
            self.register_buffer("scale", torch.ones(d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b = self.first(x) * self.scale, self.second(x @ self.weight)
            fused = nn.functional.scaled_dot_product_attention(a, b, b)
            mixed = torch.softmax(a, -1) + fused + self.dropout(_operations(b))
            return torch.cat([mixed, x])[: len(x)]

    return Layer
