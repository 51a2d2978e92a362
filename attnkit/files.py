"""Files the kit writes through a temporary file get the mode any new file would get.

``mkstemp`` and ``NamedTemporaryFile`` create files readable by their owner only (0600),
so a file renamed into place from one would be private. Results, reports and the lesson
text are read by whoever the instructor shares them with (a web folder, TAs, students'
kernels), as nbgrader's are: they get ``0666 & ~umask`` like a file ``open()`` made.
"""

from __future__ import annotations

import os
from pathlib import Path


def current_umask() -> int:
    """The process's umask (reading it means setting it, so it is set straight back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def as_new_file(target: int | Path) -> None:
    """Give ``target`` (an open descriptor or a path) the mode ``open()`` would have."""
    mode = 0o666 & ~current_umask()
    if isinstance(target, int):
        os.fchmod(target, mode)
    else:
        os.chmod(target, mode)
