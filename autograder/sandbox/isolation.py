"""The grader's side of one submission: run its cells in the sandbox, then answer calls.

:class:`IsolatedSubmission` implements the same ``run(adapter, **kwargs)`` interface as
code in this process, so the hidden suites run unchanged against it. Everything that
comes back from the sandbox is treated as hostile:

* every read has a deadline, a partial frame included, and a size bound; a submission's
  replies are bounded in total, so the grader's own memory stays bounded;
* every reply must echo the request's random nonce and pass the adapter's schema
  (:func:`attnkit.adapters.validate_result`); anything else is that submission's failure;
* what a worker says about itself (the cell outcomes it reports) only ever becomes a
  note or costs that submission: verdicts come from the values its code returned.

A call that overruns its deadline, or a worker that dies, costs only that call: the
sandbox is reset (every process of the worker killed, /tmp emptied), and the next call
starts a fresh worker that runs the cells again. A cell that had to be stopped from
outside is skipped on that replay. A budget per submission bounds the total.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import time
from dataclasses import dataclass, field
from typing import Any

from attnkit.adapters import MalformedResult, validate_result
from attnkit.notebook_code import Cell
from attnkit.student_process.wire import CELL_LIMITS
from attnkit.student_process.withheld import LENT_EXIT

from .cell_history import CellHistory
from .channel import MAX_SUBMISSION_BYTES, Channel
from .errors import (
    WITHHELD_TYPE,
    WorkerCrashed,
    WorkerTimeout,
    raised_in_submission,
)
from .layout import SandboxSettings
from .zygote import STOP_REASONS, SandboxDied, WorkerEnd, discard_zygote, shared_zygote


@dataclass(frozen=True)
class Limits:
    """What one submission may spend: seconds per call and per cell, a budget for the
    notebook's cells and as long again for the hidden tests, and memory."""

    call_timeout: float
    cell_timeout: float
    budget: float
    memory_bytes: int


class Clock:
    """A submission's time. The first run of the cells has the budget (each cell its own
    limit); once they have run, the hidden tests get the whole budget again. A hard end
    (``until``, monotonic time) bounds a later worker, whose cells' first run is free too."""

    def __init__(self, budget: float, until: float | None) -> None:
        self.budget = budget
        self.deadline = time.monotonic() + budget
        self.until = until
        self.cells_ran = False
        """Whether the cells have run once (their notes are then taken)."""

    def remaining(self) -> float:
        # A later worker's first run of the cells has each cell's own limit, as the first
        # worker's has; the hard end then counts from the end of that run (see _start).
        bound = self.until is not None and self.cells_ran
        end = min(self.deadline, self.until) if bound else self.deadline
        return end - time.monotonic()

    def cells_done(self, began: float) -> None:
        """The cells' first run ended: a later worker's cells, like the first's, are free,
        and time in the notebook's own cells (a slow experiment) never costs graded points."""
        self.cells_ran = True
        if self.until is not None:
            self.until += time.monotonic() - began
        self.deadline = time.monotonic() + self.budget


@dataclass
class Workers:
    """The current worker and the sandbox around it, and how the earlier workers ended."""

    channel: Channel | None = None
    zygote: Any = None
    crashed: bool = False
    spawned: int = 0
    offered: frozenset[str] = frozenset()
    """The released cells the sandbox computed once and offers every worker."""
    endings: list[WorkerEnd] = field(default_factory=list)
    """How each worker ended, as the zygote reported it at each reset."""
    stop_reason: str | None = None
    """Why the sandbox itself stopped the last worker, if it did (see STOP_REASONS)."""
    sandbox_kills: list[str] = field(default_factory=list)
    """The sandbox itself (its zygote, with every worker) killed from outside."""
    failed: str | None = None
    """Why the sandbox could not start or lend a worker, if it could not: the grader's
    fault, so the submission is not scored (a rerun grades it again)."""
    allowance: list[int] = field(default_factory=lambda: [MAX_SUBMISSION_BYTES])
    """Bytes this submission may still send, shared by its workers."""
    mapped: dict[int, tuple[int, int]] = field(default_factory=dict)
    """By pid, what each worker had mapped when its limit was set (told before any notebook
    code ran), and the most it ever mapped (VmPeak, read by the zygote at its end)."""


class IsolatedSubmission:
    """One submission, answered by sandboxed workers."""

    def __init__(
        self,
        cells: list[Cell],
        limits: Limits,
        *,
        sandbox: SandboxSettings | None = None,
        watch: tuple[str, ...] = (),
        label: str = "submission",
        shared: tuple[dict[str, Any], ...] = (),
        withhold: str | None = None,
        until: float | None = None,
    ) -> None:
        self.cells = cells
        self.limits = limits
        self.settings = sandbox or SandboxSettings()
        self.watch = watch
        self.label = label
        self.shared = shared
        """The lesson's released cells the sandbox may compute once (see shared_cells)."""
        self.withhold = withhold
        """The kernels the workers go without (withheld.PROFILES)."""
        self.clock = Clock(limits.budget, until)
        self.history = CellHistory()
        self.workers = Workers()
        self.variant: str | None = None
        self.timed_out: set[str] = set()
        """Exercises a call of which ran out of time: not called again."""
        self.sandbox: dict[str, Any] = {}
        """How the sandbox isolated the last worker (what every result records)."""

    @property
    def notes(self) -> list[str]:
        return self.history.notes

    # -- lifecycle ----------------------------------------------------------------------------

    def _worker_limits(self) -> dict[str, Any]:
        return {
            "memory_bytes": self.limits.memory_bytes,
            # The cells' time and the hidden tests' each have the budget (see _start).
            "cpu_seconds": max(5, int(self.clock.remaining() + self.clock.budget) + 5),
            "max_file_bytes": 64 * 1024**2,
            "seccomp": self.settings.enabled or bool(self.settings.user),
            "withhold": self.withhold,
        }

    def _start(self) -> None:
        """A fresh worker that has run the submission's cells (except those stopped before)."""
        began = time.monotonic()
        while True:
            if self.clock.remaining() <= 0:
                raise WorkerTimeout("the submission used up its total time budget")
            self._spawn()
            notes: list[str] = []
            try:
                for cell in self.cells:
                    if cell.index in self.history.stopped:
                        continue
                    if cell.is_check_cell and cell.grade_id is None:
                        continue
                    note = self._run_cell(cell)
                    if note is not None:
                        notes.append(note)
                for index in sorted(self.history.thread_cells - self.history.thread_noted):
                    # A note, never a cost: the cell's definitions stand, as in Jupyter, and
                    # no thread can reach a kernel the worker withholds.
                    self.history.stop_notes.append(
                        f"code cell {index} left a thread running (graded with it running)"
                    )
                self.history.thread_noted |= self.history.thread_cells
            except _CellStopped as stopped:
                # The worker could not stop this cell itself (or the cell killed its own
                # process, or the sandbox stopped it): start again without it.
                self.history.stopped.add(stopped.cell)
                self._stop_worker()
                note = stopped.note
                if self.workers.stop_reason:
                    note = f"code cell {stopped.cell}: {self.workers.stop_reason}; it was skipped"
                self.history.stop_notes.append(note)
                continue
            if not self.clock.cells_ran:
                self.history.notes = self.history.stop_notes + notes
                self.clock.cells_done(began)
            return

    def killed_from_outside(self) -> list[str]:
        """Workers of this submission killed by something outside the sandbox (see
        WorkerEnd.killed_from_outside), in words: the zygote's account, not the worker's."""
        ends = [end.describe() for end in self.workers.endings if end.killed_from_outside()]
        return ends + self.workers.sandbox_kills

    def _failed(self, cause: Exception) -> WorkerCrashed:
        """The sandbox failed the grader (see Workers.failed): recorded, to be raised."""
        self.workers.failed = f"the grading sandbox failed ({cause})"
        return WorkerCrashed(self.workers.failed)

    def _spawn(self) -> None:
        if self.workers.failed:  # it failed once: the submission is not scored, so stop here
            raise WorkerCrashed(self.workers.failed)
        try:
            # A sandbox that has to be (re)started here is the grader's cost: its start-up
            # time is given back to the submission's budget.
            started = time.monotonic()
            self.workers.zygote = shared_zygote(self.settings)
            restarted = self.workers.zygote.started_at >= started
            computed = time.monotonic()
            self.workers.offered = self.workers.zygote.share(self.shared)  # the grader's cost, too
            if restarted:
                computed = started
            self.clock.deadline += time.monotonic() - computed
            requests, replies = self.workers.zygote.spawn(self._worker_limits())
        except SandboxDied as exc:
            discard_zygote()
            raise self._failed(exc) from None
        self.workers.channel = Channel(requests, replies, self.workers.allowance)
        self.workers.spawned += 1
        self.history.threads = 0
        try:
            ready = self.workers.channel.receive(time.monotonic() + 30, "starting")
        except (WorkerCrashed, WorkerTimeout) as exc:
            # No notebook code has run in it yet: its start is the kit's (or the machine's).
            raise self._failed(exc) from None
        said = ready.get("ready", {}) if isinstance(ready, dict) else {}
        pid, mapped = (said.get(k) for k in ("pid", "mapped_at_start")) if said else (0, 0)
        if all(type(n) is int for n in (pid, mapped)):  # told before any notebook code ran
            self.workers.mapped[pid] = (mapped, mapped)
        self.sandbox = {
            "level": self.workers.zygote.level,
            "bwrap": self.workers.zygote.bwrap,
            "seccomp": self.settings.enabled or bool(self.settings.user),
            "memory_limit": "address space of the single worker process (fork is refused)"
            if self.settings.enabled or self.settings.user
            else "address space of the worker process",
            "tmp_bytes": self.settings.tmp_bytes,
            "worker_ready": isinstance(ready, dict) and "ready" in ready,
            "killed_from_outside": self.killed_from_outside(),
        }

    def _run_cell(self, cell: Cell) -> str | None:
        """Run one cell; a note if it failed. Raises _CellStopped if it had to be stopped here."""
        limit = min(self.limits.cell_timeout, max(self.clock.remaining(), 0.1))
        if not self.clock.cells_ran:
            # The first run of the cells: each has its own limit, whatever an earlier slow
            # cell spent (the hidden tests get the whole budget afterwards; see _start).
            limit = self.limits.cell_timeout
            reply_by = time.monotonic() + CELL_LIMITS * limit + 2.0
            self.clock.deadline = max(self.clock.deadline, reply_by)
        request = {
            "op": "cell",
            "index": cell.index,
            "source": cell.source,
            "grade_id": cell.grade_id,
            "watch": list(self.watch),
            "timeout": limit,
            # A graded check cell is not run: the worker only notes what is live there.
            "skip": cell.is_check_cell,
            "skip_lines": sorted(self.history.skipped.get(cell.index, ())),
            "shared": cell.source in self.workers.offered,
        }
        started = time.monotonic()
        try:
            reply_within = CELL_LIMITS * limit + 2.0
            reply = self._exchange(request, reply_within, f"running code cell {cell.index}")
            if not self.clock.cells_ran:
                self.history.seconds[cell.index] = round(time.monotonic() - started, 4)
        except (WorkerTimeout, WorkerCrashed) as exc:
            raise _CellStopped(
                cell.index, f"code cell {cell.index}: {exc}; it was skipped"
            ) from None
        reported = reply.get("cell") if isinstance(reply, dict) else None
        return self.history.record(cell, reported, not self.clock.cells_ran, limit)

    def _exchange(self, request: dict[str, Any], timeout: float, doing: str) -> Any:
        assert self.workers.channel is not None
        nonce = secrets.token_hex(16)
        try:
            deadline = time.monotonic() + min(timeout, max(self.clock.remaining(), 0.0))
            self.workers.channel.send({**request, "nonce": nonce}, deadline, doing)
            reply = self.workers.channel.receive(deadline, doing)
        except WorkerCrashed:
            self.workers.crashed = True
            raise
        if not isinstance(reply, dict) or reply.get("nonce") != nonce:
            raise WorkerCrashed("the submission's process sent an answer to another request")
        return reply

    def _stop_worker(self) -> None:
        if self.workers.channel is not None and self.workers.zygote is not None:
            with contextlib.suppress(SandboxDied):  # while the worker lives: its VmPeak
                for pid, peak in self.workers.zygote.measure().items():
                    if pid in self.workers.mapped:
                        self.workers.mapped[pid] = (self.workers.mapped[pid][0], peak)
        if self.workers.channel is not None:
            self.workers.channel.close()
            self.workers.channel = None
        if self.workers.zygote is not None:
            try:
                # A worker whose pipes closed is dying: let it end by itself, so the zygote
                # reports what killed it rather than killing it itself.
                ended = self.workers.zygote.reset(grace=0.5 if self.workers.crashed else 0.0)
                self.workers.endings += ended
                self.workers.stop_reason = next(
                    (STOP_REASONS[end.stopped] for end in ended if end.stopped), None
                )
            except SandboxDied:
                killed = self.workers.zygote.killed_by()
                if killed is not None:
                    name = signal.Signals(killed).name if killed < signal.SIGRTMIN else killed
                    self.workers.sandbox_kills.append(f"killed by {name}")
                discard_zygote()
            self.workers.zygote = None
        self.workers.crashed = False
        if self.sandbox:
            self.sandbox["killed_from_outside"] = self.killed_from_outside()

    def close(self) -> None:
        self._stop_worker()

    kill = close

    def memory(self) -> dict[str, Any]:
        """The workers' memory limit and the most any used, measured from outside (see
        docs/security.md): ``peak_bytes``, the address space a worker mapped at its peak
        beyond what it had when its limit was set, and ``peak_rss_bytes``, the most it held
        resident (wait4, as the zygote reaped it)."""
        added = [peak - start for start, peak in self.workers.mapped.values()]
        resident = [end.peak_rss for end in self.workers.endings if end.peak_rss is not None]
        found = {"peak_bytes": max(max(added), 0)} if added else {}
        found |= {"peak_rss_bytes": max(resident)} if resident else {}
        return {"limit_bytes": self.limits.memory_bytes, **found}

    def prepare(self) -> None:
        """Start the first worker now (running the cells), instead of at the first call."""
        if self.workers.channel is None:
            self._start()

    # -- the Implementation interface --------------------------------------------------------

    def redefined_at(self) -> set[str]:
        """Graded cells where the definitions live differ from the last ones.

        What the worker says here only chooses which of the submission's own definitions
        are also graded: a lie costs it time, and can gain it nothing it did not write.
        """
        try:
            if self.workers.channel is None:
                self.prepare()
            reply = self._exchange(
                {"op": "variants"}, self.limits.call_timeout, "listing definitions"
            )
        except (WorkerTimeout, WorkerCrashed):
            self._stop_worker()
            return set()
        differs = reply.get("differs")
        if not isinstance(differs, list):
            return set()
        return {d for d in differs[:100] if isinstance(d, str)}

    def with_variant(self, grade_id: str | None) -> IsolatedSubmission:
        """Answer calls with the definitions live at graded cell ``grade_id`` (None: the last)."""
        self.variant = grade_id
        return self

    @property
    def can_lend(self) -> bool:
        """Whether this worker may answer calls for a worker that withholds less: it is
        running, its cells have run, and they reached no withheld kernel (so its state is
        the one Jupyter would have)."""
        return (
            self.workers.channel is not None
            and self.clock.cells_ran
            and not self.history.reached
            and not self.history.withheld
        )

    def run(
        self, adapter: str, *, forbidden: tuple[str, ...] = (), lent: bool = False, **kwargs: Any
    ) -> dict[str, Any]:
        """The adapter's result for the submission's definitions. ``lent``: the call is
        asked here for a worker that withholds less; if it reaches a withheld kernel it
        raises :class:`LentCallReached` (the worker is gone) and must be asked there."""
        if self.clock.remaining() <= 0:
            raise WorkerTimeout("the submission used up its total time budget")
        target = str(kwargs.get("name", adapter))
        if target in self.timed_out:
            # One overrun per exercise is enough evidence; don't pay the timeout again.
            raise WorkerTimeout(f"not run: an earlier call of {target} ran out of time")
        if self.workers.channel is None:
            self.prepare()
        request = {
            "op": "call",
            "adapter": adapter,
            "forbidden": list(forbidden),
            "kwargs": kwargs,
            "variant": self.variant,
            "lent": lent,
        }
        try:
            reply = self._exchange(request, self.limits.call_timeout, f"running {target}")
        except WorkerTimeout:
            self.timed_out.add(target)
            self._stop_worker()
            raise
        except WorkerCrashed as crashed:
            ended = len(self.workers.endings)
            self._stop_worker()
            # The zygote's account of how the worker ended, not the worker's.
            if lent and any(end.exit == LENT_EXIT for end in self.workers.endings[ended:]):
                raise LentCallReached(target) from None
            raise WorkerCrashed(self.workers.stop_reason or str(crashed)) from None
        if "error" in reply:
            error = reply["error"]
            if lent and isinstance(error, dict) and error.get("type") == WITHHELD_TYPE:
                raise LentCallReached(target)
            raise raised_in_submission(error)
        try:
            return validate_result(adapter, reply.get("ok"))
        except MalformedResult as exc:
            self._stop_worker()
            raise WorkerCrashed(
                f"the submission's process sent a malformed reply ({exc})"
            ) from None


class LentCallReached(Exception):
    """A lent call (see :meth:`IsolatedSubmission.run`) needed a kernel this worker withholds."""


class _CellStopped(Exception):
    def __init__(self, cell: int, note: str) -> None:
        super().__init__(note)
        self.cell = cell
        self.note = note
