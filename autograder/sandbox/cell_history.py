"""What a submission's cells did, as its workers reported it: the grader's account of the
cells, kept across the workers of one submission."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from attnkit.notebook_code import Cell
from attnkit.notebook_run import CellOutcome

from .errors import WITHHELD_NOTE, WITHHELD_TYPE, untrusted_text


@dataclass
class CellHistory:
    """What the notebook's cells did, as the workers reported it. It only ever becomes a
    note, or a cell skipped when the cells run again: verdicts come from returned values."""

    seconds: dict[int, float] = field(default_factory=dict)
    """How long each cell took to answer, the first time the cells ran."""
    shared: list[int] = field(default_factory=list)
    """Cells whose results the worker took from the sandbox's one run (first run)."""
    stopped: set[int] = field(default_factory=set)
    """Cells the grader had to stop from outside: skipped when the cells run again."""
    skipped: dict[int, set[int]] = field(default_factory=dict)
    """Statements (cell index to lines) that ran to the cell's limit: left out when the
    cells run again, and every other statement of the cell still runs."""
    thread_cells: set[int] = field(default_factory=set)
    """Cells after which more threads were running than before them."""
    thread_noted: set[int] = field(default_factory=set)
    threads: int = 0
    """Threads the current worker's cells have left running so far."""
    failures: dict[int, CellOutcome] = field(default_factory=dict)
    """What each cell that raised or ran out of time did, by cell index (first run)."""
    withheld: dict[int, str] = field(default_factory=dict)
    """Cells that stopped at a withheld kernel (first run)."""
    reached: bool = False
    """A withheld kernel was reached, caught or not (see IsolatedSubmission.can_lend)."""
    notes: list[str] = field(default_factory=list)
    stop_notes: list[str] = field(default_factory=list)

    def inherit(self, first: CellHistory) -> None:
        """Take what another worker's run of the same cells had to stop (cells stopped from
        outside, statements that ran to the cell's limit): this worker's run leaves them out
        rather than pay for them again."""
        self.stopped |= first.stopped
        for index, lines in first.skipped.items():
            self.skipped.setdefault(index, set()).update(lines)

    def record(self, cell: Cell, reported: Any, first_run: bool, limit: float) -> str | None:
        """Take what a worker reported of one cell (anything at all: it is the worker's
        word); the cell's note, if it failed."""
        threads = reported.get("threads") if isinstance(reported, dict) else None
        if isinstance(threads, int) and not isinstance(threads, bool) and threads > self.threads:
            self.thread_cells.add(cell.index)
        if isinstance(threads, int) and not isinstance(threads, bool):
            self.threads = threads
        if isinstance(reported, dict) and reported.get("shared") is True and first_run:
            self.shared.append(cell.index)
        if not isinstance(reported, dict) or reported.get("withheld") != 0:
            self.reached = True  # anything but a plain count of none: assume reached
        if not isinstance(reported, dict) or reported.get("status") not in ("error", "timeout"):
            return None
        if reported.get("status") == "timeout":
            # It ran to its limit once: when the cells run again (a new worker after a
            # call timed out), that statement is left out rather than paid for again.
            line = reported.get("statement")
            if isinstance(line, int) and not isinstance(line, bool) and line > 0:
                self.skipped.setdefault(cell.index, set()).add(line)
            else:
                self.stopped.add(cell.index)
        line = reported.get("line")
        if reported.get("status") == "timeout":
            line = reported.get("statement")
        if reported.get("error_type") == WITHHELD_TYPE and first_run:
            self.withheld[cell.index] = untrusted_text(reported.get("message"), 120)
            return WITHHELD_NOTE.format(index=cell.index)
        outcome = self.failures.setdefault(
            cell.index,
            CellOutcome(
                cell.index,
                status=str(reported["status"]),
                error_type=untrusted_text(reported.get("error_type"), 80),
                message=untrusted_text(reported.get("message"), 200),
                line=line if isinstance(line, int) and not isinstance(line, bool) else None,
            ),
        )
        return outcome.note(limit, cell.source)
