"""Names are never trusted: identity comes from the part of a file name the platform
writes, and every name printed to a terminal is text, never a terminal command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from attnkit.terminal import PrintableStream, printable
from attnkit_autograder.classes.hand_in import identify_file

ROOT = Path(__file__).resolve().parents[1]
FAST = settings(max_examples=200, deadline=None)

file_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="/\0"), min_size=1, max_size=40
)
users = st.from_regex(r"[a-z][a-z0-9.-]{0,11}", fullmatch=True)
times = st.from_regex(r"20[0-9]{2}(-[0-9]{2}){5}", fullmatch=True)


@FAST
@given(st.sampled_from(["Attention", "HW 2", "lesson_2"]), users, times, file_text)
def test_blackboard_identity_comes_from_the_platforms_prefix(title, user, when, chosen) -> None:
    """Whatever the student called the file, even ``x_jdoe_attempt_2099-...``, the
    platform's ``<title>_<user>_attempt_<time>_`` prefix decides who and which attempt."""
    name = f"{title}_{user}_attempt_{when}_{chosen}.ipynb"
    who = identify_file(name, None)
    assert (who.student, who.rule, who.attempt) == (user, "blackboard", when)


def test_a_forged_later_attempt_in_the_file_name_names_no_one_else() -> None:
    name = "Attention_mallory_attempt_2024-03-02-09-30-00_x_jdoe_attempt_2099-12-31-23-59-59.ipynb"
    who = identify_file(name, None)
    assert (who.student, who.attempt) == ("mallory", "2024-03-02-09-30-00")


@FAST
@given(st.from_regex(r"[a-z]{1,12}", fullmatch=True), st.integers(1, 10**6),
       st.integers(1, 10**6), st.booleans(), file_text)  # fmt: skip
def test_canvas_identity_comes_from_the_platforms_prefix(name, user, sub, late, chosen) -> None:
    filename = f"{name}{'_LATE' if late else ''}_{user}_{sub}_{chosen}.ipynb"
    who = identify_file(filename, None)
    assert (who.student, who.rule, who.lms_number) == (name, "canvas", str(user))
    assert bool(who.notes) == late


@FAST
@given(st.text())
def test_printed_text_holds_no_terminal_control(text: str) -> None:
    shown = printable(text)
    assert all(ch.isprintable() or ch in "\n\t" for ch in shown)
    shown.encode("utf-8")  # never a lone surrogate: printing it cannot fail
    if text.isprintable():
        assert shown == text


def test_a_stream_escapes_what_is_written_through_it() -> None:
    import io

    inner = io.StringIO()
    PrintableStream(inner).write("\x1b[2K\rINCOMPLETE\u202e\udcff\n")
    assert inner.getvalue() == "\\x1b[2K\\rINCOMPLETE\\u202e\\udcff\n"


def test_hostile_file_names_reach_the_terminal_as_text(tmp_path: Path) -> None:
    """A file name that would erase the INCOMPLETE lines, and one that is not UTF-8: the
    run's output shows both as escapes and never a control byte."""
    slug = "02_self_attention"
    folder = tmp_path / "subs"
    folder.mkdir()
    broken = os.fsencode(str(folder)) + b"/\x1b[2K\x1b[1A\rok_" + slug.encode() + b".ipynb"
    with open(broken, "wb") as handle:
        handle.write(b"{not json")
    invalid = os.fsencode(str(folder)) + b"/bad\xff\xfe_" + slug.encode() + b".ipynb"
    with open(invalid, "wb") as handle:
        handle.write(b"")
    attnkit = Path(sys.executable).with_name("attnkit")
    done = subprocess.run(
        [str(attnkit), "grade", str(folder), "--out", str(tmp_path / "out"), "--jobs", "1"],
        capture_output=True,
        timeout=600,
    )
    output = done.stdout + done.stderr
    assert b"\x1b" not in output and b"\r" not in output and b"\xff" not in output, output
    assert b"\\x1b[2K" in output or b"2 could not be graded" in output, output
