"""The graders' server: one process that loads PyTorch and the grading pipeline once
(:mod:`.grader_preload`), then forks every grader of the run (see supervisor.Supervisor).

This module loads nothing heavy itself: ``attnkit grade`` starts the server before it
imports the pipeline, so the server's seconds of loading begin as early as they can.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from typing import Any

GRADER_PRELOAD = ["attnkit_autograder.classes.grader_preload"]


def grader_context() -> Any:
    """The multiprocessing context graders are forked from: one server that has loaded what
    every grader needs (see Supervisor)."""
    # The graders compare small arrays: NumPy's BLAS threads would only spin beside them
    # (about 0.1 s of a core for each process that loads NumPy). Read when NumPy loads, so
    # this holds for the server, every grader, and this process's own reports.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(GRADER_PRELOAD)
    return context


def start_grader_server() -> None:
    """Start the graders' server now, without waiting: it loads PyTorch (seconds, on one
    core) while this process finds the submissions and checks the sandbox on the other."""
    from multiprocessing import forkserver

    grader_context()
    with contextlib.suppress(OSError, ValueError):  # the first grader starts it otherwise
        forkserver.ensure_running()
