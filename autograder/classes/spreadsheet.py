"""Every cell of every CSV the kit writes, or hands to a tool that writes one, safe to open
in a spreadsheet: the one home of that guarantee (OWASP's CSV injection)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any, Literal

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def formula_like(text: str) -> bool:
    """Whether a spreadsheet could read ``text`` as a formula (OWASP's CSV injection)."""
    return text.startswith(FORMULA_START)


UNQUOTED_BREAKS = (",", ";", "\t", '"', "\r", "\n")
"""What splits a cell of a CSV written without quoting (nbgrader's own export joins its
fields with bare commas; a spreadsheet set to another separator splits on that)."""


def unsafe_unquoted_cell(text: str) -> str | None:
    """Why ``text`` is unsafe as a cell of a CSV another tool writes without quoting (an id
    the kit hands to nbgrader), or None: it would split into cells, or start one like a
    formula (every part is checked, as a tool that splits it would show them)."""
    if any(mark in text for mark in UNQUOTED_BREAKS):
        return "it holds a separator, a quote or a line break, which split a CSV row"
    if formula_like(text) or not text.isprintable():
        return "it would open as a spreadsheet formula"
    return None


def csv_cell(value: Any) -> Any:
    """A value a spreadsheet shows as text: OWASP's rule against CSV injection prefixes a
    cell that starts like a formula with a quote (the writer also quotes every text cell)."""
    if isinstance(value, str) and formula_like(value):
        return "'" + value
    return value


def csv_text(
    rows: Iterable[Iterable[Any]], quoting: Literal[0, 1, 2, 3] = csv.QUOTE_NONNUMERIC
) -> str:
    """Rows as CSV, every cell made safe to open (:func:`csv_cell`): the one writer of every
    CSV the kit writes."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=quoting)
    writer.writerows([csv_cell(value) for value in row] for row in rows)
    return buffer.getvalue()
