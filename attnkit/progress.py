"""The learner's progress: a small local record of every check, and what it adds up to.

Each ``lesson.check`` and ``attnkit check`` appends one line per exercise it checked to a
file on this machine: the lesson, the exercise, the outcome, the classic mistake named (if
any) and the time. Never the learner's code, and nothing is ever sent anywhere. The file is
``$ATTNKIT_PROGRESS``, else ``$XDG_DATA_HOME/attnkit/progress.jsonl`` (by default
``~/.local/share/attnkit/progress.jsonl``): it survives a kernel restart, and in Colab it
lasts as long as the runtime does.

``attnkit progress`` reads it back: per lesson, what passes, what is left, and the mistakes
met and fixed, as text and as an HTML page with a chart. A record that is damaged, or is
not one of the kit's at all, is ignored with a warning: reading or writing it never raises.
Nothing is recorded while nbgrader validates or grades a notebook.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .assignments import ASSIGNMENTS

SCHEMA = "attnkit-progress/1"
HEADER = json.dumps({"schema": SCHEMA, "about": "attention-kit's record of your checks"})
MAX_BYTES = 8 * 1024 * 1024
"""The most of a record that is read (its end): about 50,000 checks."""
OUTCOMES = ("passed", "failed", "not implemented", "missing")


def record_path() -> Path:
    """Where the record lives: ``$ATTNKIT_PROGRESS``, else the user's data folder."""
    chosen = os.environ.get("ATTNKIT_PROGRESS")
    if chosen:
        return Path(chosen).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "attnkit" / "progress.jsonl"


@dataclass(frozen=True)
class Entry:
    """One exercise checked once."""

    time: str
    lesson: str
    exercise: str
    outcome: str
    mistake: str | None = None
    """The id of the classic mistake the check named, if any."""
    title: str | None = None
    """That mistake's title."""
    via: str = "notebook"
    """``notebook`` (``lesson.check``) or ``attnkit check``."""

    def line(self) -> str:
        return json.dumps(self.__dict__, ensure_ascii=False)


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def recording() -> bool:
    """False while nbgrader validates or autogrades a notebook: that is not the learner."""
    return not os.environ.get("NBGRADER_EXECUTION")


_warned: set[str] = set()


def append(entries: Iterable[Entry], path: Path | None = None) -> str | None:
    """Add ``entries`` to the record. Returns a warning to show (once per process and
    reason) when they could not be added; never raises."""
    if not recording():
        return None
    path = path or record_path()
    lines = [entry.line() for entry in entries]
    if not lines:
        return None
    try:
        fresh = not path.exists() or path.stat().st_size == 0
        if not fresh and not is_record(path):
            return _once(f"{path} is not an attnkit progress record: progress is not recorded")
        path.parent.mkdir(parents=True, exist_ok=True)
        text = ((HEADER + "\n") if fresh else "") + "\n".join(lines) + "\n"
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, text.encode("utf-8"))
        finally:
            os.close(descriptor)
    except (OSError, ValueError) as exc:
        return _once(f"progress is not recorded ({path}: {getattr(exc, 'strerror', None) or exc})")
    return None


def _once(message: str) -> str | None:
    if message in _warned:
        return None
    _warned.add(message)
    return message


def is_record(path: Path) -> bool:
    """Whether ``path`` begins with the kit's header line."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(4096)
        header = json.loads(first.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return False
    return isinstance(header, dict) and header.get("schema") == SCHEMA


def read(path: Path | None = None) -> tuple[list[Entry], list[str]]:
    """(the entries, warnings). A missing record is empty; a foreign one is ignored, damaged
    lines are skipped, each with a warning."""
    path = path or record_path()
    try:
        if not path.exists():
            return [], []
        if not path.is_file():
            return [], [f"{path} is not a file: it is ignored"]
        if not is_record(path):
            return [], [f"{path} is not an attnkit progress record: it is ignored"]
        size = path.stat().st_size
        with open(path, "rb") as handle:
            handle.seek(max(0, size - MAX_BYTES))
            raw = handle.read(MAX_BYTES)
    except OSError as exc:
        return [], [f"{path} cannot be read ({exc.strerror or exc}): it is ignored"]
    lines = raw.decode("utf-8", errors="replace").splitlines()
    warnings = []
    if size > MAX_BYTES:
        lines = lines[1:]  # the first line read is most likely cut in two
        warnings.append(f"{path} is large: only its last {MAX_BYTES // 2**20} MiB are read")
    else:
        lines = lines[1:]  # the header
    entries, damaged = [], 0
    for line in lines:
        if not line.strip():
            continue
        entry = parse(line)
        if entry is None:
            damaged += 1
        elif entry.lesson in ASSIGNMENTS:
            entries.append(entry)
    if damaged:
        warnings.append(f"{path}: {damaged} damaged line(s) skipped")
    return entries, warnings


def parse(line: str) -> Entry | None:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    text = ("time", "lesson", "exercise", "outcome", "via")
    optional = ("mistake", "title")
    if not all(isinstance(data.get(key), str) for key in text):
        return None
    if not all(data.get(key) is None or isinstance(data.get(key), str) for key in optional):
        return None
    if data["outcome"] not in OUTCOMES:
        return None
    return Entry(**{key: data.get(key) for key in (*text, *optional)})


# -- what the record adds up to -----------------------------------------------------------------


@dataclass
class Mistake:
    exercise: str
    id: str
    title: str
    met: str
    """When it was first named."""
    fixed: str | None = None
    """When the exercise next passed, if it has."""


@dataclass
class LessonProgress:
    slug: str
    title: str
    exercises: list[str]
    latest: dict[str, Entry] = field(default_factory=dict)
    history: dict[str, list[Entry]] = field(default_factory=dict)
    mistakes: list[Mistake] = field(default_factory=list)

    @property
    def passed(self) -> list[str]:
        return [e for e in self.exercises if self.status(e) == "passed"]

    @property
    def left(self) -> list[str]:
        return [e for e in self.exercises if self.status(e) != "passed"]

    @property
    def started(self) -> bool:
        return bool(self.latest)

    def status(self, exercise: str) -> str:
        entry = self.latest.get(exercise)
        return "not checked yet" if entry is None else entry.outcome


def summarise(entries: list[Entry]) -> list[LessonProgress]:
    """Per lesson, in teaching order: the latest outcome of each exercise, every check, and
    each mistake met (and when it was fixed: the exercise passed after it was named)."""
    lessons = []
    for slug, assignment in ASSIGNMENTS.items():
        names = [e.name for e in assignment.exercises]
        progress = LessonProgress(slug, assignment.title, names)
        open_mistakes: dict[tuple[str, str], Mistake] = {}
        for entry in entries:
            if entry.lesson != slug or entry.exercise not in names:
                continue
            progress.latest[entry.exercise] = entry
            progress.history.setdefault(entry.exercise, []).append(entry)
            if entry.mistake:
                key = (entry.exercise, entry.mistake)
                if key not in open_mistakes:
                    title = entry.title or entry.mistake
                    met = Mistake(entry.exercise, entry.mistake, title, entry.time)
                    open_mistakes[key] = met
                    progress.mistakes.append(met)
            elif entry.outcome == "passed":
                for (exercise, mistake_id), met in list(open_mistakes.items()):
                    if exercise == entry.exercise:
                        met.fixed = entry.time
                        del open_mistakes[(exercise, mistake_id)]
        lessons.append(progress)
    return lessons


def failed_since_passing(entries: list[Entry], slug: str, exercise: str) -> int:
    """Checks of ``exercise`` that failed since it last passed (or ever, if it never did)."""
    count = 0
    for entry in entries:
        if (entry.lesson, entry.exercise) == (slug, exercise):
            count = 0 if entry.outcome == "passed" else count + (entry.outcome == "failed")
    return count


def day(time: str) -> str:
    return time[:10]


def render_text(lessons: list[LessonProgress]) -> str:
    lines = []
    for number, lesson in enumerate(lessons, start=1):
        head = f"Lesson {number} · {lesson.title}"
        if not lesson.started:
            lines += [f"{head}: not started (attnkit start {number})", ""]
            continue
        lines.append(f"{head}: {len(lesson.passed)} of {len(lesson.exercises)} exercises pass")
        lines.append(f"  passes: {', '.join(lesson.passed) or '-'}")
        left = [f"{name} ({lesson.status(name)})" for name in lesson.left]
        lines.append(f"  left:   {', '.join(left) or 'nothing: the lesson is done'}")
        for mistake in lesson.mistakes:
            state = f"fixed {day(mistake.fixed)}" if mistake.fixed else "not fixed yet"
            lines.append(
                f"  mistake met {day(mistake.met)}: {mistake.title} ({mistake.exercise}), {state}"
            )
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# -- the HTML page --------------------------------------------------------------------------------

COLOURS = {
    "passed": "#2e7d32",
    "failed": "#c62828",
    "mistake": "#ef6c00",
    "not implemented": "#9e9e9e",
    "missing": "#9e9e9e",
}
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 60em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { padding: .25em .7em; text-align: left; border-bottom: 1px solid #ddd; }
.legend span { display: inline-block; width: .9em; height: .9em; margin: 0 .3em 0 1em;
  vertical-align: middle; }
.muted { color: #666; } .passed { color: #2e7d32; } .left { color: #c62828; }
"""


def bar(lesson: LessonProgress) -> str:
    """An SVG bar: one segment per exercise, coloured by its latest outcome."""
    width, height, gap = 480, 22, 3
    step = width / max(len(lesson.exercises), 1)
    parts = []
    for index, name in enumerate(lesson.exercises):
        entry = lesson.latest.get(name)
        colour = "#e0e0e0" if entry is None else COLOURS[entry.outcome]
        parts.append(
            f'<rect x="{index * step:.1f}" y="0" width="{step - gap:.1f}" height="{height}" '
            f'fill="{colour}"><title>{html.escape(name)}: {html.escape(lesson.status(name))}'
            "</title></rect>"
        )
    return (
        f'<svg role="img" aria-label="{len(lesson.passed)} of {len(lesson.exercises)} exercises '
        f'pass" width="{width}" height="{height}">{"".join(parts)}</svg>'
    )


def strip(entries: list[Entry]) -> str:
    """An SVG strip: one square per check of an exercise, in order."""
    size, gap = 12, 3
    shown = entries[-40:]
    squares = []
    for index, entry in enumerate(shown):
        kind = "mistake" if entry.mistake else entry.outcome
        label = entry.outcome + (f": {entry.title}" if entry.title else "")
        squares.append(
            f'<rect x="{index * (size + gap)}" y="0" width="{size}" height="{size}" '
            f'fill="{COLOURS[kind]}"><title>{html.escape(entry.time)} '
            f"{html.escape(label)}</title></rect>"
        )
    return f'<svg width="{len(shown) * (size + gap)}" height="{size}">{"".join(squares)}</svg>'


def state_class(status: str) -> str:
    """How an exercise's state is coloured: passed green, failed red, the rest grey."""
    return {"passed": "passed", "failed": "left"}.get(status, "muted")


def render_html(lessons: list[LessonProgress], warnings: list[str]) -> str:
    legend = "".join(
        f'<span style="background:{COLOURS[k]}"></span>{label}'
        for k, label in (
            ("passed", "passed"),
            ("failed", "failed"),
            ("mistake", "a classic mistake named"),
            ("not implemented", "not implemented yet"),
        )
    )
    body = [
        "<h1>Your progress in attention-kit</h1>",
        '<p class="muted">From the checks you ran (lesson.check and attnkit check) on this '
        "machine. Nothing of your code is recorded, and nothing is sent anywhere.</p>",
        f'<p class="legend">{legend}</p>',
    ]
    body += [f'<p class="left">warning: {html.escape(w)}</p>' for w in warnings]
    for number, lesson in enumerate(lessons, start=1):
        title = f"Lesson {number} · {html.escape(lesson.title)}"
        if not lesson.started:
            body.append(f'<h2>{title}</h2><p class="muted">not started</p>')
            continue
        body.append(
            f"<h2>{title}: {len(lesson.passed)} of {len(lesson.exercises)} pass</h2>{bar(lesson)}"
        )
        rows = "".join(
            f"<tr><td><code>{html.escape(name)}</code></td>"
            f'<td class="{state_class(lesson.status(name))}">'
            f"{html.escape(lesson.status(name))}</td>"
            f"<td>{strip(lesson.history.get(name, []))}</td></tr>"
            for name in lesson.exercises
        )
        body.append(f"<table><tr><th>exercise</th><th>now</th><th>checks</th></tr>{rows}</table>")
        if lesson.mistakes:
            items = "".join(
                f"<tr><td>{html.escape(m.title)}</td><td><code>{html.escape(m.exercise)}</code></td>"
                f"<td>{day(m.met)}</td>"
                f'<td class="{"passed" if m.fixed else "left"}">'
                f"{'fixed ' + day(m.fixed) if m.fixed else 'not fixed yet'}</td></tr>"
                for m in lesson.mistakes
            )
            body.append(
                "<table><tr><th>mistake met</th><th>in</th><th>when</th><th>since</th></tr>"
                f"{items}</table>"
            )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>attention-kit: your progress</title><style>{STYLE}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def entries_of(slug: str, checked: list[tuple[str, list[Any]]], via: str) -> list[Entry]:
    """The record's entries for ``checked``: (exercise, its self-check results) pairs."""
    from .selfcheck.report import exercise_status

    time = now()
    found = []
    for exercise, results in checked:
        status = exercise_status(results)
        if status not in OUTCOMES:
            continue
        named = next((r for r in results if getattr(r, "mistake", None)), None)
        found.append(
            Entry(
                time,
                slug,
                exercise,
                status,
                named.mistake if named else None,
                named.diagnosis if named else None,
                via,
            )
        )
    return found
