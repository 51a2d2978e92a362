"""The one exception type the command line turns into a friendly message."""

from __future__ import annotations


class KitError(Exception):
    """A problem the user can fix: what went wrong, and what to do about it.

    The CLI prints ``message`` and ``hint`` and exits non-zero, with no traceback.
    Anything that is *not* a KitError is a bug in the kit and keeps its traceback.
    """

    exit_code = 1
    """The command's exit status (2 for a command line that cannot be used as given)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if self.hint is None else f"{self.message}\n{self.hint}"
