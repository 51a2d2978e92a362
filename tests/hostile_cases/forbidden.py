"""The from-scratch rule by principle: any softmax or attention kernel, whatever its name or
variant (dense, log, masked, sparse), and a recorder that must prove it was watching.

A canary call before and after each exercise must be seen by the recorder; code that
switches the recorder off (through the ``attnkit`` package the lesson's own import binds,
or by popping PyTorch's mode stacks) makes the check "could not be verified", which costs
the exercise. A softmax computed in another thread is not seen by a recorder that watches
one thread: a thread left running while an exercise runs makes the check unverifiable too.
"""

from __future__ import annotations

from .classic import (
    LOSES_SOFTMAX,
    LOSES_SOFTMAX_USERS,
    LOSES_UNCHECKED,
    SOFTMAX_CELL,
    V2_CELL,
    Case,
    Targets,
    _softmax_evasion,
)

# A sparse softmax leaves out the zeros it is given, so the exercises built on it are wrong.
SPARSE_LOST = (*LOSES_SOFTMAX, "test_v1_forward", V2_CELL)

THREAD_SOFTMAX = """
import queue as _queue, threading as _threading
_jobs, _done = _queue.Queue(), _queue.Queue()

def _serve():
    while True:
        x, dim = _jobs.get()
        _done.put(torch.softmax(x, dim))

_threading.Thread(target=_serve, daemon=True).start()
"""

SPARSE_GETATTR = 'getattr(torch.sparse, "soft" + "max")(x.to_sparse(), dim).to_dense()'
SPARSE_ATEN = "torch.ops.aten._sparse_softmax.int(x.to_sparse(), dim).to_dense()"

PACKAGE_SWITCH = """
import attnkit.notebook
attnkit.student_process.recorder.Recorder.__enter__ = lambda self: self
attnkit.student_process.recorder.Recorder.__exit__ = lambda self, *exc: None
"""


def cases(targets: Targets) -> list[Case]:
    return [
        _softmax_evasion(
            "sm_masked_softmax",
            "torch._masked_softmax(x, torch.zeros_like(x, dtype=torch.bool), dim, 0)",
        ),
        Case("sm_sparse_softmax_by_getattr", "evasion", SPARSE_LOST, SOFTMAX_CELL, "forbidden",
             "torch.sparse.softmax", {"softmax": "return " + SPARSE_GETATTR}),
        Case("sm_aten_sparse_softmax", "evasion", SPARSE_LOST, SOFTMAX_CELL, "forbidden",
             "aten._sparse_softmax", {"softmax": "return " + SPARSE_ATEN}),
        _softmax_evasion("sm_softmin_of_negated", "torch.nn.functional.softmin(-x, dim)"),
        Case("sm_recorder_off_through_the_lessons_import", "evasion", LOSES_UNCHECKED,
             SOFTMAX_CELL, "forbidden", "could not be checked",
             {"softmax": "return torch.nan_to_num(torch.softmax(x, dim), nan=0.0)"},
             PACKAGE_SWITCH, "attnkit.student_process.recorder"),
        # The cell that starts the helper thread leaves it running, so the hidden tests run
        # without that cell: its queues are not there, and every softmax user fails.
        Case("sm_in_another_thread", "evasion", LOSES_SOFTMAX_USERS, SOFTMAX_CELL, "error",
             "_jobs",
             {"softmax": "_jobs.put((x, dim))\nreturn torch.nan_to_num(_done.get(), nan=0.0)"},
             THREAD_SOFTMAX),
    ]  # fmt: skip
