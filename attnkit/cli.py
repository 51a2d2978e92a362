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
    """A student's notebooks: here, in work/ (where ``attnkit start`` copies a lesson), in a
    folder per assignment, in notebooks/ (where the student bundle puts them), or under
    assignments/ (a clone of the kit)."""
    from .workspace import WORK

    found = []
    for slug in slugs:
        for candidate in (
            root / f"{slug}.ipynb",
            root / WORK / f"{slug}.ipynb",
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
        if not args.notebook.is_file():
            what = "is not a file" if args.notebook.exists() else "does not exist"
            raise KitError(
                f"{args.notebook} {what}.",
                "Pass the path of your notebook, or copy a lesson to work on with "
                "`attnkit start N` and check it with `attnkit check N`.",
            )
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
    import importlib.util
    import io

    from . import progress
    from .assignments import ASSIGNMENTS
    from .implementation import LocalImplementation
    from .notebook_run import load_notebook
    from .selfcheck import run_exercise
    from .selfcheck.report import exercise_status, render_table

    if ASSIGNMENTS[slug].framework == "torch" and importlib.util.find_spec("torch") is None:
        from .notebook import needs_torch

        print(f"{ASSIGNMENTS[slug].title}: {path}\n  {needs_torch(slug)}\n")
        return False
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
    warning = progress.append(progress.entries_of(slug, rows, "attnkit check"))
    if warning:
        print(f"attnkit check: {warning}", file=sys.stderr)
    return all_passed


def cmd_check(args: argparse.Namespace) -> int:
    """Run the visible checks against a student's notebook and print a table per exercise."""
    outcomes = [check_notebook(slug, path, args.timeout) for slug, path in check_targets(args)]
    return 0 if all(outcomes) else 1


def cmd_start(args: argparse.Namespace) -> int:
    """Copy a lesson into work/ to work on (a copy already there is kept)."""
    from .workspace import start_lesson

    slug = resolve_assignment(args.assignment)
    path, copied = start_lesson(slug, Path.cwd())
    shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
    if copied:
        print(f"copied lesson {slug} to {shown}: work in this copy.")
    else:
        print(f"{shown} is already there: your work in it is kept.")
    print(f"open it:   attnkit lab {shown}")
    print(f"check it:  attnkit check {slug[:2].lstrip('0')}")
    return 0


def cmd_progress(args: argparse.Namespace) -> int:
    """Print what the record of your checks adds up to, and write it as an HTML page."""
    from . import progress

    entries, warnings = progress.read()
    for warning in warnings:
        print(f"attnkit progress: warning: {warning}", file=sys.stderr)
    lessons = progress.summarise(entries)
    print(progress.render_text(lessons), end="")
    try:
        args.html.parent.mkdir(parents=True, exist_ok=True)
        args.html.write_text(progress.render_html(lessons, warnings), encoding="utf-8")
    except OSError as exc:
        raise KitError(f"cannot write {args.html} ({exc.strerror or exc}).") from None
    print(f"\nwrote {args.html} (the same, as a chart); the record is {progress.record_path()}")
    return 0


def cmd_lab(args: argparse.Namespace) -> int:
    """Start JupyterLab for working on the lessons, without nbgrader's instructor tools."""
    from .workspace import learner_jupyter_config

    config = learner_jupyter_config()
    paths = [
        str(config),
        *filter(None, os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep)),
    ]
    env = {**os.environ, "JUPYTER_CONFIG_PATH": os.pathsep.join(paths)}
    command = [sys.executable, "-m", "jupyter", "lab", *args.lab_args]
    sys.stdout.flush()
    os.execve(sys.executable, command, env)
    return 0  # not reached: JupyterLab replaces this process


PUBLIC_COMMANDS = ("data", "check", "start", "progress", "lab")
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

    add_learner_commands(commands)

    for extension in command_extensions() if extensions else ():
        extension(commands)
    return parser


def add_learner_commands(commands: Any) -> None:
    """The self-learner's commands: start, progress and lab."""
    start = commands.add_parser(
        "start",
        help="copy a lesson into work/ to work on",
        description="Copy lesson N's released notebook into work/, where you work on it and "
        "where `attnkit check N` finds it first. A copy already there is kept, never replaced.",
    )
    start.add_argument("assignment", help="assignment number or name, e.g. 1 or 01_numpy_attention")
    start.set_defaults(handler=cmd_start)

    progress = commands.add_parser(
        "progress",
        help="what you have done so far, from the record of your checks",
        description="Per lesson: what passes, what is left, the classic mistakes met and "
        "fixed, from the record lesson.check and attnkit check keep on this machine "
        "(never your code; nothing is sent anywhere). Also writes it as an HTML page.",
    )
    progress.add_argument(
        "--html",
        type=Path,
        default=Path("attnkit-progress.html"),
        metavar="PATH",
        help="where to write the HTML page (default: attnkit-progress.html)",
    )
    progress.set_defaults(handler=cmd_progress)

    lab = commands.add_parser(
        "lab",
        help="start JupyterLab for the lessons, without nbgrader's instructor tools",
        description="Start JupyterLab (arguments are passed on to `jupyter lab`) with "
        "nbgrader's instructor menus hidden: its formgrader, course list, assignment list "
        "and create-assignment tools. Its Validate button stays.",
    )
    lab.add_argument("lab_args", nargs=argparse.REMAINDER, metavar="ARG", help="for jupyter lab")
    lab.set_defaults(handler=cmd_lab)


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
    args, unknown = parser.parse_known_args(words)
    if getattr(args, "command", None) == "lab":
        # Everything after `lab` is JupyterLab's, options included (argparse would take them).
        args.lab_args = words[words.index("lab") + 1 :]
    elif unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
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
