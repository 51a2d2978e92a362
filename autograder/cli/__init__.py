"""The instructors' ``attnkit`` commands: generate, grade, merge, regrade, slurm, export,
report, gradescope, release, demo, course.

They register themselves into the public command line through the ``attnkit.commands``
entry point (see pyproject.toml), so the public ``attnkit`` package never names this one:
a student install (the bundle) has no such entry point, and its ``attnkit --help`` lists
only the student commands. This is the command-line layer: each command turns its parsed
arguments into one library call and returns an exit code; errors the user can fix are
:class:`~attnkit.errors.KitError`.
"""

from __future__ import annotations

from typing import Any

from . import authoring, grading, platforms


def register(commands: Any) -> None:
    """Add the instructors' commands to the ``attnkit`` sub-command parsers."""
    authoring.add_generate(commands)
    grading.add_grade(commands)
    grading.add_merge(commands)
    grading.add_regrade(commands)
    grading.add_slurm(commands)
    platforms.add_export(commands)
    platforms.add_report(commands)
    platforms.add_gradescope(commands)
    platforms.add_release(commands)
    platforms.add_demo(commands)
    platforms.add_course(commands)
