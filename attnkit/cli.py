"""The ``attnkit`` command line.

Each sub-command is one function taking the parsed arguments and returning an exit
code. Errors the user can fix are :class:`~attnkit.errors.KitError` and print as a short
message with a hint; they never show a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .assignments import assignment_in_metadata
from .errors import KitError


def cmd_data(args: argparse.Namespace) -> int:
    """Find (or install, or download) the-verdict.txt, verify it and count its tokens."""
    from attnkit_data import verdict
    from attnkit_data.tokenizer import gpt2_tokenizer

    if args.source is not None:
        found = verdict.VerdictFile(verdict.install_copy(args.source, "--from"), "--from")
    else:
        found = verdict.locate_verdict(allow_download=not args.offline)
    text = found.path.read_text(encoding="utf-8")
    tokens = gpt2_tokenizer().encode(text, allowed_special={"<|endoftext|>"})
    print(f"the-verdict.txt  {found.path}  ({found.source})")
    print(f"  size    {found.path.stat().st_size:,} bytes")
    print(f"  sha256  {verdict.VERDICT_SHA256}  ok")
    print(f"  tokens  {len(tokens):,} (GPT-2 BPE, offline)")
    return 0


def find_notebooks(slugs: list[str], root: Path) -> list[tuple[str, Path]]:
    """A student's notebooks: here, in a folder per assignment, in notebooks/ (where the
    student bundle puts them), or under assignments/ (a clone of the kit)."""
    found = []
    for slug in slugs:
        for candidate in (
            root / f"{slug}.ipynb",
            root / slug / f"{slug}.ipynb",
            root / "notebooks" / f"{slug}.ipynb",
            root / "assignments" / slug / f"{slug}.ipynb",
        ):
            if candidate.is_file():
                found.append((slug, candidate))
                break
    return found


CELL_TIMEOUT = 30.0
"""Seconds one notebook cell may run in ``attnkit check`` (as in the grader)."""


@contextlib.contextmanager
def kernel_folder(folder: Path) -> Iterator[None]:
    """Run as a Jupyter kernel started on a notebook in ``folder`` does: ``folder`` is the
    working folder and importable, so a module one cell writes (%%writefile helper.py)
    is imported by another. Both are put back afterwards."""
    previous = Path.cwd()
    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(str(folder))
        os.chdir(previous)


def notebook_assignment(path: Path) -> str | None:
    """The lesson a notebook file says it is, or None (not a notebook, unreadable, silent)."""
    import json

    if path.suffix != ".ipynb":
        return None
    try:
        return assignment_in_metadata(json.loads(path.read_bytes()))
    except (OSError, ValueError, RecursionError):
        return None


def resolve_assignment(name: str) -> str:
    """The slug of an assignment named by number or slug, or a refusal listing them."""
    from .assignments import get_assignment

    try:
        return get_assignment(name).slug
    except KeyError as exc:
        raise KitError(exc.args[0]) from None


def check_targets(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """(assignment, notebook) pairs to check: --notebook, or the lesson notebooks found
    here; refused when a notebook's own metadata names another lesson."""
    from .assignments import ASSIGNMENTS

    if args.notebook is not None:
        if args.assignment:
            slug = resolve_assignment(args.assignment)
        else:
            matches = [s for s in ASSIGNMENTS if s in args.notebook.name]
            if not matches:
                raise KitError(
                    f"cannot tell which assignment {args.notebook} is.",
                    "Name it: attnkit check 02 --notebook PATH",
                )
            slug = matches[0]
        targets = [(slug, args.notebook)]
    else:
        slugs = [resolve_assignment(args.assignment)] if args.assignment else list(ASSIGNMENTS)
        targets = find_notebooks(slugs, Path.cwd())
        if not targets:
            wanted = " or ".join(f"{s}.ipynb" for s in slugs)
            raise KitError(
                f"found no {wanted} here ({Path.cwd()}).",
                "Run this in the folder that holds your notebook (or its notebooks/ or "
                "assignments/ folder), or pass --notebook PATH.",
            )
    for slug, path in targets:
        named = notebook_assignment(path)
        if named is not None and named != slug:
            raise KitError(
                f"{path} is the {named} notebook (its metadata says so), not {slug}.",
                f"Check it as that lesson: attnkit check {named} --notebook {path}",
            )
    return targets


def check_notebook(slug: str, path: Path, timeout: float) -> bool:
    """Run ``path`` as Jupyter would, then the visible checks of every exercise of
    ``slug``; print the table and the notes. Whether every check passed."""
    import io

    from .assignments import ASSIGNMENTS
    from .implementation import LocalImplementation
    from .notebook_code import load_notebook
    from .selfcheck import run_exercise
    from .selfcheck.report import exercise_status, render_table

    rows = []
    all_passed = True
    where = path.resolve()  # before the working folder changes
    with kernel_folder(where.parent):
        # Demo code prints; the table is what matters here.
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            run = load_notebook(where, cell_timeout=CELL_TIMEOUT)
        impl = LocalImplementation(run.namespace, label=str(path))
        for exercise in ASSIGNMENTS[slug].exercises:
            with contextlib.redirect_stdout(io.StringIO()):
                results = run_exercise(impl, slug, exercise.name, timeout_s=timeout)
            rows.append((exercise.name, results))
            all_passed &= exercise_status(results) == "passed"
    print(render_table(f"{ASSIGNMENTS[slug].title}: {path}", rows))
    for note in run.notes:
        print(f"note: {note}")
    print()
    return all_passed


def cmd_check(args: argparse.Namespace) -> int:
    """Run the visible checks against a student's notebook and print a table per exercise."""
    outcomes = [check_notebook(slug, path, args.timeout) for slug, path in check_targets(args)]
    return 0 if all(outcomes) else 1


PUBLIC_COMMANDS = ("data", "check")
"""The student commands, which this package defines itself."""


def build_parser(extensions: bool = True) -> argparse.ArgumentParser:
    """The command line; with ``extensions`` False, the student commands only."""
    parser = argparse.ArgumentParser(
        prog="attnkit",
        description="attention-kit: exercises, self-checks and a grader for self-attention.",
    )
    parser.add_argument("--version", action="version", version=f"attnkit {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    data = commands.add_parser(
        "data",
        help="find, verify and (when online) download the-verdict.txt",
        description="Find the-verdict.txt ($ATTNKIT_VERDICT, the data folder, a shared copy, "
        "then a download), check its SHA-256 and count its GPT-2 tokens.",
    )
    data.add_argument(
        "--from",
        dest="source",
        type=Path,
        metavar="PATH",
        help="install this local copy into the data folder (after checking it)",
    )
    data.add_argument("--offline", action="store_true", help="never try to download")
    data.set_defaults(handler=cmd_data)

    check = commands.add_parser(
        "check",
        help="run the visible checks against your notebook",
        description="Run the visible checks of an assignment against a notebook and print a "
        "table per exercise. Exits 1 unless every exercise passes. These are the public "
        "checks only; grades come from hidden tests.",
    )
    check.add_argument(
        "assignment", nargs="?", help="assignment number or name, e.g. 2 or 02_self_attention"
    )
    check.add_argument("--notebook", type=Path, metavar="PATH", help="the notebook to check")
    check.add_argument(
        "--timeout", type=float, default=10.0, help="seconds allowed per check (default 10)"
    )
    check.set_defaults(handler=cmd_check)

    for extension in command_extensions() if extensions else ():
        extension(commands)
    return parser


COMMANDS_GROUP = "attnkit.commands"
"""Entry points in this group add commands (the instructor's kit registers its own)."""


def command_extensions() -> list[Callable[[Any], None]]:
    """The installed packages' command registrations, in name order. One that cannot be
    loaded is skipped with a warning: the student commands must always work."""
    from importlib.metadata import entry_points

    loaded = []
    for entry in sorted(entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        try:
            loaded.append(entry.load())
        except Exception as exc:  # a broken install of an add-on must not stop `attnkit check`
            print(f"attnkit: commands from {entry.value} are unavailable ({exc})", file=sys.stderr)
    return loaded


def main(argv: Sequence[str] | None = None) -> int:
    from .terminal import printable_output

    with printable_output():
        return run(argv)


def run(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run its command; everything it prints goes through
    :func:`attnkit.terminal.printable_output` (see :func:`main`)."""
    words = list(sys.argv[1:] if argv is None else argv)
    # A student command never loads the instructor's: `attnkit check` starts in a blink.
    parser = build_parser(extensions=not (words and words[0] in PUBLIC_COMMANDS))
    args = parser.parse_args(words)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return handler(args)
    except KitError as err:
        print(f"attnkit {args.command}: {err.message}", file=sys.stderr)
        if err.hint:
            print(err.hint, file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print(f"attnkit {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
