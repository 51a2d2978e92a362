"""The command reference (docs/commands.md), generated from the ``attnkit`` argument parser.

Every command, its synopsis, what it does and each option with its default, rendered as
Markdown between two markers in docs/commands.md. ``attnkit generate`` writes it and
``attnkit generate --check`` (run by a test) fails when the page differs, so the reference
cannot drift from what the command line accepts.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from attnkit.cli import build_parser
from attnkit.errors import KitError

START, END = "<!-- command-reference:start -->", "<!-- command-reference:end -->"
PAGE = Path(__file__).resolve().parents[2] / "docs" / "commands.md"


def subcommands(
    parser: argparse.ArgumentParser, prefix: str
) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    """(full name, parser, one-line help) for every leaf command, in the parser's order."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, sub in action.choices.items():
            nested = any(isinstance(a, argparse._SubParsersAction) for a in sub._actions)
            if nested:
                yield from subcommands(sub, f"{prefix} {name}")
            else:
                yield f"{prefix} {name}", sub, helps.get(name, "")


def synopsis(name: str, parser: argparse.ArgumentParser) -> str:
    usage = parser.format_usage().strip().removeprefix("usage: ")
    words = [w for w in usage.split() if w != "[-h]"]
    start = len(name.split())  # argparse writes the program and command names first
    return " ".join([name, *words[start:]])


DEFAULT_IN_HELP = re.compile(r"\s*\(default:? ([^)]*)\)")


def default_and_help(action: argparse.Action) -> tuple[str, str]:
    """The default as the reader should see it, and the help without it. A help text that
    states its default ("(default: cores)") wins over the value, which may be this
    machine's (the number of cores)."""
    help_text = action.help or ""
    stated = DEFAULT_IN_HELP.search(help_text)
    if stated:
        return stated.group(1), DEFAULT_IN_HELP.sub("", help_text, count=1)
    if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0:
        return "", help_text
    return f"`{action.default}`", help_text


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            flag = max(action.option_strings, key=len)
            metavar = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
            name = f"`{flag}{metavar}`"
        else:
            name = f"`{action.metavar or action.dest}`"
        shown, help_text = default_and_help(action)
        if action.choices and action.option_strings:
            help_text += f" (one of {', '.join(f'`{c}`' for c in action.choices)})"
        rows.append(f"| {name} | {shown} | {cell(help_text)} |")
    return rows


def render() -> str:
    """The reference, as Markdown, without the markers."""
    parser = build_parser()
    parts = [
        "The same text as `attnkit COMMAND --help`, generated from the parser by "
        "`attnkit generate`; `attnkit --version` prints the kit's version.",
    ]
    for name, sub, help_text in subcommands(parser, "attnkit"):
        parts.append(f"### `{synopsis(name, sub)}`")
        parts.append(cell(sub.description or help_text))
        rows = option_rows(sub)
        if rows:
            parts.append(
                "| argument | default | meaning |\n| --- | --- | --- |\n" + "\n".join(rows)
            )
    return "\n\n".join(parts) + "\n"


def between_markers(text: str, start: str, end: str, body: str) -> str:
    """``text`` with what stands between the markers ``start`` and ``end`` replaced by
    ``body``: how ``attnkit generate`` keeps a generated part of a hand-written file."""
    if start not in text or end not in text:
        raise KitError(f"the page lacks the markers {start} and {end}")
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    return f"{before}{start}\n{body}{end}{after}"


def with_reference(readme: str) -> str:
    """``readme`` (the page) with the text between the markers replaced by :func:`render`."""
    return between_markers(readme, START, END, render())


def stale(path: Path = PAGE) -> list[str]:
    """Why the command reference is out of date (empty if it is current)."""
    if not path.is_file():
        return []  # an installed kit has no docs/ to keep current
    text = path.read_text(encoding="utf-8")
    try:
        current = with_reference(text) == text
    except KitError as exc:
        return [str(exc)]
    return [] if current else [f"{path}: the command reference differs from the parser"]


def write(path: Path = PAGE) -> Path | None:
    """Rewrite the reference in ``path`` if it differs; returns the path if it wrote."""
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    new = with_reference(text)
    if new == text:
        return None
    path.write_text(new, encoding="utf-8")
    return path
