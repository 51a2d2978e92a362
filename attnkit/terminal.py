"""What the kit prints to a terminal shows names as text, never as terminal commands.

File names, student ids, notes and error messages can come from students. An ESC byte in
a file name could move the cursor and erase the lines that say a run is INCOMPLETE; a
right-to-left override could reverse what an instructor reads; bytes that are not UTF-8
could crash the print itself. Every character Python does not call printable (controls,
format characters, surrogates, line separators) is written as its escape, ``\\x1b``;
newlines and tabs are kept. The command line writes everything through
:class:`PrintableStream`, so no print site can forget.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import TextIO

KEPT = frozenset("\n\t")


def printable(text: str) -> str:
    """``text`` with every non-printable character but newline and tab escaped."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() or ch in KEPT else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def one_line(text: str) -> str:
    """``text`` as one line of a report: every non-printable character escaped, newlines
    and tabs too, so a name can neither end its line nor forge the next one."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


class PrintableStream(io.TextIOBase):
    """A text stream that writes :func:`printable` text to ``inner``."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(printable(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()


def raw(stream: TextIO) -> TextIO:
    """The stream under a :class:`PrintableStream`: for the kit's own progress bar, whose
    carriage returns are its own and whose text holds no name."""
    while isinstance(stream, PrintableStream):
        stream = stream.inner
    return stream


@contextlib.contextmanager
def printable_output() -> Iterator[None]:
    """Route ``sys.stdout`` and ``sys.stderr`` through :class:`PrintableStream` for a while."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (
        s if isinstance(s, PrintableStream) else PrintableStream(s) for s in saved
    )
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
