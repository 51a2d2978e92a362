"""``attnkit generate``: every derived file, written (or checked) from the kit's sources."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_generate(commands: Any) -> None:
    generate = commands.add_parser(
        "generate",
        help="(instructors) regenerate assignments/ from the source notebooks with nbgrader",
    )
    generate.add_argument(
        "--out",
        type=Path,
        default=Path("assignments"),
        metavar="DIR",
        help="the folder of released notebooks to write or check (default: assignments)",
    )
    generate.add_argument(
        "--check", action="store_true", help="only report whether DIR is up to date"
    )
    generate.set_defaults(handler=cmd_generate)


def cmd_generate(args: argparse.Namespace) -> int:
    """Regenerate the student notebooks in assignments/ with nbgrader (instructors)."""
    from ..authoring import command_reference as reference
    from ..authoring import expected_values, fingerprints, registry, released
    from ..grading import kernels

    if args.check:
        stale_registry = registry.stale()
        problems = stale_registry + released.released_differences(args.out)
        # The visible checks name their exercises in the registry: with a stale one they
        # cannot load, so the fingerprints wait until it is regenerated.
        problems += [] if stale_registry else fingerprints.stale() + expected_values.stale()
        problems += [] if stale_registry else kernels.stale()
        problems += reference.stale()
        for problem in problems:
            print(problem)
        if problems:
            print("run `attnkit generate` to regenerate them", file=sys.stderr)
            return 1
        print(f"{args.out} matches the source notebooks")
        return 0
    for path in [*registry.write(), *released.generate_released(args.out)]:
        print(f"wrote {path}")
    print(f"wrote {expected_values.write()}")
    print(f"wrote {fingerprints.write_fingerprints()}")
    for path in kernels.write():
        print(f"wrote {path}")
    if (readme := reference.write()) is not None:
        print(f"wrote the command reference in {readme}")
    return 0
