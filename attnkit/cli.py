"""The ``attnkit`` command line.

Each sub-command is one function taking the parsed arguments and returning an exit
code. Errors the user can fix are :class:`~attnkit.errors.KitError` and print as a short
message with a hint; they never show a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__
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


def build_parser() -> argparse.ArgumentParser:
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
        return 1
    except KeyboardInterrupt:
        print(f"attnkit {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
