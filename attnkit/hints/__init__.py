"""The hint ladder: ``lesson.hint(exercise)``, one rung at a time, from the last check.

The rungs, in order, for the outcome of the exercise's last ``lesson.check``:

1. **what the check saw**: the first check that failed, its message, and the classic
   mistake it matches when the self-check named one;
2. **the idea** the exercise tests (and the one the named mistake misses);
3. **where to look** in the learner's code: the one line that does what the named mistake
   gets wrong, when exactly one line of the exercise's own definition does that kind of
   thing (otherwise the place in words: like a named mistake, a line is pointed at only
   when the evidence singles it out);
4. **the reference answer** with a short explanation, only once the exercise has failed
   its checks :data:`REFERENCE_AFTER` times (a stub not yet filled in does not count).

A different outcome (another failing check, another mistake) starts the ladder again
from the first rung. Where no reference is installed (a course's student bundle), the
third rung is the last and says so. The references come from the packages registered in
the ``attnkit.references`` entry-point group: this package never holds or names them.

The words of each rung are written per exercise and per named mistake in ``lesson_0N.py``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..outcome import FAILING, MISSING, NOT_IMPLEMENTED, PASSED, Outcome

REFERENCE_AFTER = 3
"""Failed checks of an exercise before its reference answer is shown."""
REFERENCES_GROUP = "attnkit.references"
RUNGS = ("what the check saw", "the idea", "where to look", "the reference answer")


@dataclass(frozen=True)
class ExerciseHints:
    """The words of an exercise's ladder."""

    idea: str
    """The idea the exercise tests."""
    look: str
    """Where to look, in words, when no mistake is named."""


@dataclass(frozen=True)
class MistakeHints:
    """The words of a named mistake's rungs, and what its line does."""

    idea: str
    """The idea the mistake misses."""
    look: str
    """Where to look, in words."""
    site: tuple[str, ...] = ()
    """What a line that holds the mistake does (see :func:`site_lines`): ``call:NAME`` (a call
    of a function or method NAME), ``attr:NAME`` (an attribute read), ``op:@`` / ``op:/`` /
    ``op:~`` / ``op:**`` (an operator), ``compare``, ``assign:subscript`` (``a[...] = ...``)."""


@dataclass(frozen=True)
class Reference:
    code: str
    explanation: str


def texts(slug: str) -> tuple[dict[str, ExerciseHints], dict[tuple[str, str], MistakeHints]]:
    """The ladder's words for lesson ``slug`` (empty when it has none yet)."""
    try:
        module = importlib.import_module(f"{__package__}.lesson_{slug[:2]}")
    except ModuleNotFoundError:
        return {}, {}
    return module.EXERCISES, module.MISTAKES


# -- the references -------------------------------------------------------------------------------


def reference_providers() -> list[Callable[[str, str], Any]]:
    """The installed packages' reference providers (none in a course's student bundle)."""
    from importlib.metadata import entry_points

    loaded = []
    for entry in sorted(entry_points(group=REFERENCES_GROUP), key=lambda e: e.name):
        try:
            loaded.append(entry.load())
        except Exception:  # a broken add-on must never break a hint
            continue
    return loaded


def reference_answer(slug: str, exercise: str) -> Reference | None:
    """The reference answer to ``exercise``, from the first provider that has one."""
    for provider in reference_providers():
        try:
            found = provider(slug, exercise)
        except Exception:
            continue
        if isinstance(found, dict) and isinstance(found.get("code"), str):
            return Reference(found["code"], str(found.get("explanation") or ""))
    return None


def references_installed() -> bool:
    return bool(reference_providers())


# -- pointing at a line ---------------------------------------------------------------------------


def definition_source(obj: Any) -> tuple[list[str], int] | None:
    """(lines, first line number in its cell) of the function, or of a class's ``forward``,
    that answers an exercise; None when there is no source to read."""
    target = obj.__dict__.get("forward", obj) if inspect.isclass(obj) else obj
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        return None
    try:
        lines, start = inspect.getsourcelines(target)
    except (OSError, TypeError):
        return None
    return lines, max(start, 1)


def _matches(node: ast.AST, site: str) -> bool:
    kind, _, name = site.partition(":")
    if kind == "call" and isinstance(node, ast.Call):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return called == name
    if kind == "attr":
        return isinstance(node, ast.Attribute) and node.attr == name
    if kind == "op":
        operators = {"@": ast.MatMult, "/": ast.Div, "**": ast.Pow, "~": ast.Invert}
        wanted = operators[name]
        return (isinstance(node, ast.BinOp) and isinstance(node.op, wanted)) or (
            isinstance(node, ast.UnaryOp) and isinstance(node.op, wanted)
        )
    if kind == "compare":
        return isinstance(node, ast.Compare)
    if kind == "assign":
        return isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Subscript) for t in node.targets
        )
    return False


def site_lines(lines: list[str], sites: tuple[str, ...]) -> list[int]:
    """The 0-based lines of a definition's body holding something ``sites`` describes."""
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    body = definition.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    found = set()
    for statement in body:
        for node in ast.walk(statement):
            if any(_matches(node, site) for site in sites):
                found.add(node.lineno - 1)
    return sorted(found)


def pointed_line(obj: Any, sites: tuple[str, ...]) -> tuple[int, str] | None:
    """(line number in its cell, text) of the one line of ``obj``'s definition that holds
    what ``sites`` describes; None unless there is exactly one."""
    if not sites:
        return None
    source = definition_source(obj)
    if source is None:
        return None
    lines, start = source
    found = site_lines(lines, sites)
    if len(found) != 1:
        return None
    return start + found[0], lines[found[0]].strip()


# -- the ladder -----------------------------------------------------------------------------------


def signature(results: list[Outcome]) -> tuple[Any, ...]:
    """What makes two checks' outcomes the same for the ladder."""
    failing = tuple(r.check for r in results if r.status != PASSED)
    named = next((r.mistake for r in results if r.mistake), None)
    return (results[0].status if results else "", named, failing)


@dataclass
class Ladder:
    """One exercise's ladder, at the rung last shown for one outcome."""

    outcome: tuple[Any, ...]
    shown: int = 0


def first_failure(results: list[Outcome]) -> Outcome | None:
    return next((r for r in results if r.status != PASSED), None)


def mistake_info(slug: str, exercise: str, mistake_id: str) -> Any:
    """The shipped description of a named mistake (title, symptom, hint), if any."""
    from ..diagnosis import load_fingerprints

    for info in load_fingerprints(slug, exercise).mistakes:
        if (info.assignment, info.exercise, info.id) == (slug, exercise, mistake_id):
            return info
    return None


def rung_symptom(slug: str, exercise: str, results: list[Outcome]) -> list[str]:
    first = first_failure(results)
    if first is None:
        return [f"{exercise} passes its visible checks: there is nothing to hint."]
    if first.status == NOT_IMPLEMENTED:
        return [
            f"{exercise} is not implemented yet: its cell still raises NotImplementedError.",
            "Replace the two stub lines with your code, run the cell, then check again.",
        ]
    if first.status == MISSING:
        return [f"{exercise}: {first.message}"]
    lines = [f"The check '{first.check}' {first.status}:", f"  {first.message}"]
    named = next((r for r in results if r.mistake), None)
    if named is not None:
        info = mistake_info(slug, exercise, named.mistake or "")
        symptom = f" ({info.symptom})" if info is not None else ""
        lines.append(f"That is what a classic mistake looks like: {named.diagnosis}{symptom}.")
    elif first.hint:
        lines.append(first.hint)
    failing = sum(r.status in FAILING for r in results)
    if failing > 1:
        lines.append(f"({failing} of its {len(results)} checks fail; this is the first.)")
    return lines


def rung_idea(slug: str, exercise: str, results: list[Outcome]) -> list[str]:
    exercises, mistakes = texts(slug)
    lines = []
    if exercise in exercises:
        lines.append(exercises[exercise].idea)
    named = next((r for r in results if r.mistake), None)
    if named is not None:
        words = mistakes.get((exercise, named.mistake or ""))
        if words is not None:
            lines.append(words.idea)
        elif named.hint:
            lines.append(named.hint)
    if not lines:
        task = next((r.check for r in results), "")
        lines.append(f"Read the docstring's Contract again, clause by clause: {task}.")
    return lines


def rung_where(slug: str, exercise: str, results: list[Outcome], obj: Any) -> list[str]:
    exercises, mistakes = texts(slug)
    named = next((r for r in results if r.mistake), None)
    words = mistakes.get((exercise, named.mistake or "")) if named is not None else None
    lines = []
    if words is not None:
        point = pointed_line(obj, words.site)
        if point is not None:
            number, text = point
            lines.append(f"Look at line {number} of the cell that defines {exercise}:")
            lines.append(f"    {text}")
        lines.append(words.look)
    elif exercise in exercises:
        lines.append(exercises[exercise].look)
    else:
        lines.append(f"Compare each line of {exercise} with the clause of the Contract it serves.")
    return lines


def rung_reference(slug: str, exercise: str, failed: int) -> tuple[list[str], bool]:
    """The reference rung's lines, and whether the reference was shown."""
    if failed < REFERENCE_AFTER:
        return [
            f"The reference answer opens once {exercise} has failed its checks "
            f"{REFERENCE_AFTER} times ({failed} so far). Work with the hints above, check "
            "again, and ask for this hint once more."
        ], False
    found = reference_answer(slug, exercise)
    if found is None:
        return [f"No reference answer to {exercise} is installed here."], False
    lines = [f"The kit's reference answer (the body of {exercise}):", ""]
    lines += ["    " + line if line.strip() else "" for line in found.code.splitlines()]
    if found.explanation:
        lines += ["", *found.explanation.splitlines()]
    return lines, True


def climb(
    ladder: Ladder | None,
    slug: str,
    exercise: str,
    results: list[Outcome],
    obj: Any,
    failed: int,
    with_reference: bool,
) -> tuple[Ladder, str]:
    """The next rung for ``results`` (the last check's), and the ladder after it."""
    outcome = signature(results)
    if ladder is None or ladder.outcome != outcome:
        ladder = Ladder(outcome)
    last = len(RUNGS) if with_reference else len(RUNGS) - 1
    if first_failure(results) is None:
        return ladder, rung_symptom(slug, exercise, results)[0]
    number = min(ladder.shown + 1, last)
    ladder.shown = number
    if number == 1:
        body = rung_symptom(slug, exercise, results)
    elif number == 2:
        body = rung_idea(slug, exercise, results)
    elif number == 3:
        body = rung_where(slug, exercise, results, obj)
    else:
        body, shown = rung_reference(slug, exercise, failed)
        if not shown:
            ladder.shown = 3  # the reference rung opens later: the next hint asks again
    head = f"{exercise} · hint {number} of {last}: {RUNGS[number - 1]}"
    tail = []
    if number < last:
        tail = [f"(lesson.hint({exercise}) again for {RUNGS[number]})"]
    elif not with_reference:
        tail = textwrap.wrap(
            "That is the last hint here: this installation has no reference answers (a "
            "course's student bundle holds none). Ask your instructors, or work a small "
            "input by hand and compare with what your code prints.",
            WIDTH + 2,
        )
    return ladder, "\n".join([head, *indented(body), *tail])


WIDTH = 88


def indented(body: list[str]) -> list[str]:
    """A rung's lines, indented under its head: prose wrapped, code and quotes as they are."""
    lines = []
    for line in body:
        if not line.strip() or line.startswith(" "):
            lines.append("  " + line if line.strip() else "")
        else:
            lines += textwrap.wrap(line, WIDTH, initial_indent="  ", subsequent_indent="  ")
    return lines
