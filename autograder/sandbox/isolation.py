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
import os
import secrets
import select
import signal
import time
from typing import Any

from attnkit.adapters import MalformedResult, validate_result
from attnkit.notebook_code import Cell, CellOutcome
from attnkit.student_process.wire import HEADER, WireError, decode, encode
from attnkit.student_process.withheld import LENT_EXIT

from .errors import (
    WITHHELD_NOTE,
    WITHHELD_TYPE,
    WorkerCrashed,
    WorkerTimeout,
    _text,
    raised_in_submission,
)
from .layout import SandboxSettings
from .zygote import STOP_REASONS, SandboxDied, WorkerEnd, discard_zygote, shared_zygote

MAX_FRAME_BYTES = 32 * 1024**2
MAX_SUBMISSION_BYTES = 128 * 1024**2


class Channel:
    """One worker's request and reply pipes, read with deadlines and bounds."""

    def __init__(self, requests: int, replies: int, allowance: list[int]) -> None:
        self.requests, self.replies = requests, replies
        self.allowance = allowance  # bytes this submission may still send, shared by workers
        os.set_blocking(replies, False)

    def send(self, message: Any) -> None:
        payload = encode(message)
        data = memoryview(HEADER.pack(len(payload)) + payload)
        try:
            while data:
                written = os.write(self.requests, data)
                data = data[written:]
        except OSError as exc:
            raise WorkerCrashed("the submission's process stopped reading") from exc

    def _read(self, count: int, deadline: float, doing: str) -> bytes:
        chunks: list[bytes] = []
        while count:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout(f"no answer after the time limit while {doing}")
            ready, _, _ = select.select([self.replies], [], [], remaining)
            if not ready:
                continue
            try:
                chunk = os.read(self.replies, min(count, 1 << 20))
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                raise WorkerCrashed("the submission's process exited while " + doing)
            chunks.append(chunk)
            count -= len(chunk)
        return b"".join(chunks)

    def receive(self, deadline: float, doing: str) -> Any:
        header = self._read(HEADER.size, deadline, doing)
        (length,) = HEADER.unpack(header)
        if length > MAX_FRAME_BYTES or length > self.allowance[0]:
            raise WorkerCrashed("the submission's process sent more data than the grader accepts")
        self.allowance[0] -= length
        body = self._read(length, deadline, doing)
        try:
            return decode(body)
        except (WireError, RecursionError, MemoryError) as exc:
            raise WorkerCrashed(
                f"the submission's process sent a malformed reply ({exc})"
            ) from None

    def close(self) -> None:
        for fd in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                os.close(fd)


class IsolatedSubmission:
    """One submission, answered by sandboxed workers."""

    def __init__(
        self,
        cells: list[Cell],
        *,
        call_timeout: float = 10.0,
        cell_timeout: float = 30.0,
        budget: float = 60.0,
        memory_bytes: int = 2 * 1024**3,
        sandbox: SandboxSettings | None = None,
        watch: tuple[str, ...] = (),
        label: str = "submission",
        shared: tuple[dict[str, Any], ...] = (),
        withhold: str | None = None,
        until: float | None = None,
    ) -> None:
        self.cells = cells
        # The kernels the workers go without (withheld.PROFILES); a hard end (monotonic
        # time) no budget extends; cells that stopped at a withheld kernel (first run).
        self.withhold, self.until, self.withheld_cells = withhold, until, dict[int, str]()
        self.cells_reached = False  # a withheld kernel, caught or not (see can_lend)
        self.shared = shared
        """The lesson's released cells the sandbox may compute once (see shared_cells)."""
        self.offered: frozenset[str] = frozenset()
        self.cell_seconds: dict[int, float] = {}
        """How long each cell took to answer, the first time the cells ran."""
        self.shared_cells: list[int] = []
        """Cells whose results the worker took from the sandbox's one run (first run)."""
        self.label = label
        self.call_timeout = call_timeout
        self.cell_timeout = cell_timeout
        self.deadline = time.monotonic() + budget
        self.budget = budget
        self.memory_bytes = memory_bytes
        self.settings = sandbox or SandboxSettings()
        self.watch = watch
        self.variant: str | None = None
        self.notes: list[str] = []
        self.sandbox: dict[str, Any] = {}
        self.stopped_cells: set[int] = set()
        self.thread_cells: set[int] = set()
        """Cells after which more threads were running than before them."""
        self.thread_noted: set[int] = set()
        self.threads = 0
        """Threads the current worker's cells have left running so far."""
        self.stop_notes: list[str] = []
        self.notes_taken = False
        self.cell_failures: dict[int, CellOutcome] = {}
        """What each cell that raised or ran out of time did, by cell index (first run)."""
        self.spawned = 0
        self.timed_out: set[str] = set()
        self.endings: list[WorkerEnd] = []
        """How each worker ended, as the zygote reported it at each reset."""
        self.stop_reason: str | None = None
        """Why the sandbox itself stopped the last worker, if it did (see STOP_REASONS)."""
        self._allowance = [MAX_SUBMISSION_BYTES]
        self._channel: Channel | None = None
        self._zygote: Any = None
        self._crashed = False
        self.sandbox_kills: list[str] = []
        """The sandbox itself (its zygote, with every worker) killed from outside."""

    # -- lifecycle ----------------------------------------------------------------------------

    def _remaining(self) -> float:
        # A later worker's first run of the cells has each cell's own limit, as the first
        # worker's has; the hard end then counts from the end of that run (see _start).
        bound = self.until is not None and self.notes_taken
        end = min(self.deadline, self.until) if bound else self.deadline
        return end - time.monotonic()

    def _limits(self) -> dict[str, Any]:
        return {
            "memory_bytes": self.memory_bytes,
            # The cells' time and the hidden tests' each have the budget (see _start).
            "cpu_seconds": max(5, int(self._remaining() + self.budget) + 5),
            "max_file_bytes": 64 * 1024**2,
            "seccomp": self.settings.enabled or bool(self.settings.user),
            "withhold": self.withhold,
        }

    def _start(self) -> None:
        """A fresh worker that has run the submission's cells (except those stopped before)."""
        began = time.monotonic()
        while True:
            if self._remaining() <= 0:
                raise WorkerTimeout("the submission used up its total time budget")
            self._spawn()
            notes: list[str] = []
            try:
                for cell in self.cells:
                    if cell.index in self.stopped_cells:
                        continue
                    if cell.is_check_cell and cell.grade_id is None:
                        continue
                    note = self._run_cell(cell)
                    if note is not None:
                        notes.append(note)
                if self.threads and self.thread_cells:
                    # The recorder watches the exercise's own thread only: the hidden tests
                    # run in a worker without the cells that left threads running (a cell
                    # stopped at its time limit may have left one too).
                    for index in sorted(self.thread_cells - self.thread_noted):
                        stopped = "was stopped at its time limit and " * (
                            index in self.stopped_cells
                        )
                        self.stop_notes.append(
                            f"code cell {index} {stopped}left a thread running; the exercises "
                            "were graded without that cell (stop the threads a cell starts, "
                            "e.g. close a progress bar, if that cell defines something graded)"
                        )
                    self.thread_noted |= self.thread_cells
                    self.stopped_cells |= self.thread_cells
                    self._stop_worker()
                    continue
            except _CellStopped as stopped:
                # The worker could not stop this cell itself (or the cell killed its own
                # process, or the sandbox stopped it): start again without it.
                self.stopped_cells.add(stopped.cell)
                self._stop_worker()
                note = stopped.note
                if self.stop_reason:
                    note = f"code cell {stopped.cell}: {self.stop_reason}; it was skipped"
                self.stop_notes.append(note)
                continue
            if not self.notes_taken:
                self.notes = self.stop_notes + notes
                self.notes_taken = True
                if self.until is not None:  # a later worker's cells, like the first's, are free
                    self.until += time.monotonic() - began
                # Time in the notebook's own cells (a slow experiment) never costs graded
                # points: the hidden tests get the whole budget once the cells have run.
                self.deadline = time.monotonic() + self.budget
            return

    def killed_from_outside(self) -> list[str]:
        """Workers of this submission killed by something outside the sandbox (see
        WorkerEnd.killed_from_outside), in words: the zygote's account, not the worker's."""
        ends = [end.describe() for end in self.endings if end.killed_from_outside()]
        return ends + self.sandbox_kills

    def _spawn(self) -> None:
        try:
            # A sandbox that has to be (re)started here is the grader's cost: its start-up
            # time is given back to the submission's budget.
            started = time.monotonic()
            self._zygote = shared_zygote(self.settings)
            restarted = self._zygote.started_at >= started
            computed = time.monotonic()
            self.offered = self._zygote.share(self.shared)  # the grader's cost, too
            if restarted:
                computed = started
            self.deadline += time.monotonic() - computed
            requests, replies = self._zygote.spawn(self._limits())
        except SandboxDied as exc:
            discard_zygote()
            raise WorkerCrashed(f"the grading sandbox failed ({exc})") from None
        self._channel = Channel(requests, replies, self._allowance)
        self.spawned += 1
        self.threads = 0
        ready = self._channel.receive(time.monotonic() + 30, "starting")
        self.sandbox = {
            "level": self._zygote.level,
            "bwrap": self._zygote.bwrap,
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
        limit = min(self.cell_timeout, max(self._remaining(), 0.1))
        if not self.notes_taken:
            # The first run of the cells: each has its own limit, whatever an earlier slow
            # cell spent (the hidden tests get the whole budget afterwards; see _start).
            limit = self.cell_timeout
            self.deadline = max(self.deadline, time.monotonic() + limit + 2.0)
        request = {
            "op": "cell",
            "index": cell.index,
            "source": cell.source,
            "grade_id": cell.grade_id,
            "watch": list(self.watch),
            "timeout": limit,
            # A graded check cell is not run: the worker only notes what is live there.
            "skip": cell.is_check_cell,
            "shared": cell.source in self.offered,
        }
        started = time.monotonic()
        try:
            reply = self._exchange(request, limit + 2.0, f"running code cell {cell.index}")
            if not self.notes_taken:
                self.cell_seconds[cell.index] = round(time.monotonic() - started, 4)
        except (WorkerTimeout, WorkerCrashed) as exc:
            raise _CellStopped(
                cell.index, f"code cell {cell.index}: {exc}; it was skipped"
            ) from None
        reported = reply.get("cell") if isinstance(reply, dict) else None
        threads = reported.get("threads") if isinstance(reported, dict) else None
        if isinstance(threads, int) and not isinstance(threads, bool) and threads > self.threads:
            self.thread_cells.add(cell.index)
        if isinstance(threads, int) and not isinstance(threads, bool):
            self.threads = threads
        if isinstance(reported, dict) and reported.get("shared") is True and not self.notes_taken:
            self.shared_cells.append(cell.index)
        if not isinstance(reported, dict) or reported.get("withheld") != 0:
            self.cells_reached = True  # anything but a plain count of none: assume reached
        if not isinstance(reported, dict) or reported.get("status") not in ("error", "timeout"):
            return None
        if reported.get("status") == "timeout":
            # It ran to its limit once: when the cells run again (a new worker after a
            # call timed out), it is skipped rather than paid for again.
            self.stopped_cells.add(cell.index)
        line = reported.get("line")
        if reported.get("error_type") == WITHHELD_TYPE and not self.notes_taken:
            self.withheld_cells[cell.index] = _text(reported.get("message"), 120)
            return WITHHELD_NOTE.format(index=cell.index)
        outcome = self.cell_failures.setdefault(
            cell.index,
            CellOutcome(
                cell.index,
                status=str(reported["status"]),
                error_type=_text(reported.get("error_type"), 80),
                message=_text(reported.get("message"), 200),
                line=line if isinstance(line, int) and not isinstance(line, bool) else None,
            ),
        )
        return outcome.note(limit, cell.source)

    def _exchange(self, request: dict[str, Any], timeout: float, doing: str) -> Any:
        assert self._channel is not None
        nonce = secrets.token_hex(16)
        try:
            self._channel.send({**request, "nonce": nonce})
            deadline = time.monotonic() + min(timeout, max(self._remaining(), 0.0))
            reply = self._channel.receive(deadline, doing)
        except WorkerCrashed:
            self._crashed = True
            raise
        if not isinstance(reply, dict) or reply.get("nonce") != nonce:
            raise WorkerCrashed("the submission's process sent an answer to another request")
        return reply

    def _stop_worker(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._zygote is not None:
            try:
                # A worker whose pipes closed is dying: let it end by itself, so the zygote
                # reports what killed it rather than killing it itself.
                ended = self._zygote.reset(grace=0.5 if self._crashed else 0.0)
                self.endings += ended
                self.stop_reason = next(
                    (STOP_REASONS[end.stopped] for end in ended if end.stopped), None
                )
            except SandboxDied:
                killed = self._zygote.killed_by()
                if killed is not None:
                    name = signal.Signals(killed).name if killed < signal.SIGRTMIN else killed
                    self.sandbox_kills.append(f"killed by {name}")
                discard_zygote()
            self._zygote = None
        self._crashed = False
        if self.sandbox:
            self.sandbox["killed_from_outside"] = self.killed_from_outside()

    def close(self) -> None:
        self._stop_worker()

    kill = close

    def prepare(self) -> None:
        """Start the first worker now (running the cells), instead of at the first call."""
        if self._channel is None:
            self._start()

    # -- the Implementation interface --------------------------------------------------------

    def redefined_at(self) -> set[str]:
        """Graded cells where the definitions live differ from the last ones.

        What the worker says here only chooses which of the submission's own definitions
        are also graded: a lie costs it time, and can gain it nothing it did not write.
        """
        try:
            if self._channel is None:
                self.prepare()
            reply = self._exchange({"op": "variants"}, self.call_timeout, "listing definitions")
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
            self._channel is not None
            and self.notes_taken
            and not self.cells_reached
            and not self.withheld_cells
        )

    def run(
        self, adapter: str, *, forbidden: tuple[str, ...] = (), lent: bool = False, **kwargs: Any
    ) -> dict[str, Any]:
        """The adapter's result for the submission's definitions. ``lent``: the call is
        asked here for a worker that withholds less; if it reaches a withheld kernel it
        raises :class:`LentCallReached` (the worker is gone) and must be asked there."""
        if self._remaining() <= 0:
            raise WorkerTimeout("the submission used up its total time budget")
        target = str(kwargs.get("name", adapter))
        if target in self.timed_out:
            # One overrun per exercise is enough evidence; don't pay the timeout again.
            raise WorkerTimeout(f"not run: an earlier call of {target} ran out of time")
        if self._channel is None:
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
            reply = self._exchange(request, self.call_timeout, f"running {target}")
        except WorkerTimeout:
            self.timed_out.add(target)
            self._stop_worker()
            raise
        except WorkerCrashed as crashed:
            ended = len(self.endings)
            self._stop_worker()
            # The zygote's account of how the worker ended, not the worker's.
            if lent and any(end.exit == LENT_EXIT for end in self.endings[ended:]):
                raise LentCallReached(target) from None
            raise WorkerCrashed(self.stop_reason or str(crashed)) from None
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
