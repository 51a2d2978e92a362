"""The catalogue of classic mistakes and the grader's diagnosis with it.

Each lesson folder's ``mistakes.toml`` holds that lesson's mistakes; the mistakes made in
several exercises of the kit (an operation done wrong wherever it is written) are in
``lessons/operations.toml``.

The catalogue holds each classic mistake as code: the body an exercise would have if a
student made it. An entry may be a *family*: its code has ``$placeholders`` and
``family`` lists the values each one takes (any wrong axis, any order of the heads), so
the way a student happens to write the mistake does not matter.

A mistake that can be made in several exercises (no scaling, an inverted mask, softmax
over the wrong axis) is one entry whose ``code`` is a table, ``"assignment/exercise" =
body``: one id, title and hint, and a body per exercise where it can be made. It loads
as one :class:`Mistake` per exercise, so everything downstream sees one site at a time.

The grader answers the recorded calls with the references and builds each mistake's
programs on them (:func:`diagnose`); the rule that decides is the public one in
:mod:`attnkit.diagnosis`, which the self-check applies to shipped fingerprints instead.
This is instructor-side code: it ``exec``s the catalogue's programs, and the student
bundle holds neither them nor this module.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import string
import textwrap
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from attnkit.assignments import ASSIGNMENTS
from attnkit.diagnosis import (
    MEMORY,
    Answer,
    MistakeInfo,
    RecordedCall,
    explains,
    replay,
    single_out,
)

from ..lessons import LESSONS, folder

OPERATIONS = LESSONS / "operations.toml"
"""The mistakes made in several exercises: one entry each, a body per exercise."""


@dataclass(frozen=True)
class Mistake(MistakeInfo):
    template: str = ""
    """The code, with ``$placeholders`` when the mistake is a family."""
    family: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Placeholder name and the values it takes; every combination is one program."""
    student: str = ""
    """The same mistake written the way a student would, unlike ``code``: whole definitions,
    which the diagnosis corpus grades as one more case (tests/test_diagnosis_corpus.py)."""

    def programs(self) -> list[str]:
        """The code of every member of the family (one program when there is no family)."""
        if not self.family:
            return [self.template]
        names = [name for name, _ in self.family]
        template = string.Template(self.template)
        programs = (
            template.substitute(dict(zip(names, values, strict=True)))
            for values in itertools.product(*(values for _, values in self.family))
        )
        return list(dict.fromkeys(programs))  # a site's code may not use every placeholder

    @property
    def code(self) -> str:
        """One runnable program of the mistake: what the kit's tests paste into a notebook."""
        return self.programs()[0]


@functools.cache
def load_mistakes() -> tuple[Mistake, ...]:
    """Every mistake of the catalogue, one per exercise where it can be made: each lesson's
    own (its folder's ``mistakes.toml``), then those of :data:`OPERATIONS`."""
    mistakes = []
    for slug in ASSIGNMENTS:
        for entry in entries(folder(slug) / "mistakes.toml"):
            mistakes += expand({"assignment": slug, **entry})
    for entry in entries(OPERATIONS):
        mistakes += expand(entry)
    keys = [m.key for m in mistakes]
    if len(set(keys)) != len(keys):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"mistakes defined twice: {twice}")
    return tuple(mistakes)


def entries(path: Path) -> list[dict[str, Any]]:
    """The ``[[mistake]]`` entries of one catalogue file (none when it has no file)."""
    if not path.is_file():
        return []
    with path.open("rb") as handle:
        return tomllib.load(handle).get("mistake", [])


def expand(entry: dict[str, Any]) -> list[Mistake]:
    """One catalogue entry as its mistakes: one, or one per exercise of a ``code`` table."""
    entry = dict(entry)
    family = tuple((k, tuple(str(v) for v in vs)) for k, vs in entry.pop("family", {}).items())
    code = entry.pop("code")
    if isinstance(code, str):
        return [Mistake(**entry, template=textwrap.dedent(code).strip(), family=family)]
    if "assignment" in entry or "exercise" in entry:
        raise ValueError(f"{entry['id']}: a code table names its exercises itself")
    sites = []
    for site, body in code.items():
        assignment, _, exercise = site.partition("/")
        template = textwrap.dedent(body).strip()
        sites.append(
            Mistake(
                **entry,
                assignment=assignment,
                exercise=exercise,
                template=template,
                family=family,
            )
        )
    return sites


def mistakes_for(slug: str, exercise: str) -> list[Mistake]:
    return [m for m in load_mistakes() if m.assignment == slug and m.exercise == exercise]


# -- variants -------------------------------------------------------------------------------


def build_variant(base: Mapping[str, Any], exercise: str, code: str) -> dict[str, Any] | None:
    """``base`` with ``exercise`` replaced by the wrong ``code``; None if impossible."""
    target = base.get(exercise)
    if target is None:
        return None
    namespace = dict(base)
    if inspect.isclass(target):
        function = compile_body(target.forward, code, namespace, "forward")
        namespace[exercise] = type(exercise, (target,), {"forward": function})
    else:
        namespace[exercise] = compile_body(target, code, namespace, target.__name__)
    return namespace


def compile_body(template: Any, body: str, namespace: dict[str, Any], name: str) -> Any:
    """A function with ``template``'s signature and ``body`` as its code."""
    signature = inspect.signature(template)
    params = str(signature).split(" -> ")[0]
    source = f"def {name}{params}:\n" + textwrap.indent(body, "    ")
    globals_ = {**getattr(template, "__globals__", {}), **namespace}
    exec(compile(source, f"<mistake {name}>", "exec"), globals_)  # our own catalogue's code
    return globals_[name]


def build_program(base: Mapping[str, Any], exercise: str, code: str) -> dict[str, Any] | None:
    """``base`` with ``exercise`` replaced by the program ``code``; None if it does not build
    (it does not compile, or ``base`` lacks the exercise)."""
    try:
        return build_variant(base, exercise, code)
    except Exception:
        return None


def variants(base: Mapping[str, Any], mistake: Mistake) -> Iterator[dict[str, Any]]:
    """Every program of the mistake's family built on ``base`` (those that compile)."""
    for code in mistake.programs():
        namespace = build_program(base, mistake.exercise, code)
        if namespace is not None:
            yield namespace


def diagnose(
    slug: str, exercise: str, calls: list[RecordedCall], base: Mapping[str, Any]
) -> Mistake | None:
    """The catalogued mistake that alone explains the recorded calls, or None.

    ``base`` is the correct namespace (the references): it answers the calls correctly,
    and each mistake's programs are built on it.
    """
    answered = [c for c in calls if c.outcome is not None or c.raised is not None]
    if not answered:
        return None
    submission = [c.answer for c in answered]
    replays = Replays(base, exercise, [c.key for c in answered], answered)
    correct = replays.answers(None)

    def explained(mistake: Mistake) -> bool:
        return any(
            explains(submission, correct, answers, memory=mistake.evidence == MEMORY)
            for answers in (replays.answers(code) for code in mistake.programs())
            if answers is not None
        )

    return single_out(mistakes_for(slug, exercise), submission, explained)


class Replays:
    """The answers of the references (code None) and of each catalogued program to one
    submission's calls, remembered by the grader across submissions.

    The references and the catalogue's programs are the kit's own code, and each call seeds
    what it draws: the same program asked the same call (the same request, by its key)
    gives the same answer. Most submissions of a class are asked the same calls, so a
    grader replays each pair once rather than once per mistaken submission (13 ms of each).
    """

    MEMORY = 4096
    """Answers kept (a lesson's calls for the references and every program are far
    fewer); past it, the memory starts over: with --seed-per-student no two submissions
    are asked the same calls."""
    _answers: ClassVar[dict[tuple[frozenset[Any], str, str | None, str], Answer]] = {}
    _programs: ClassVar[dict[tuple[frozenset[Any], str, str], dict[str, Any] | None]] = {}
    _bases: ClassVar[dict[frozenset[Any], Mapping[str, Any]]] = {}
    """Each base by what it holds (each name and the id of its object: the references
    namespace is made anew for each submission, of the same objects), kept alive so that
    no id it names is reused."""

    def __init__(
        self, base: Mapping[str, Any], exercise: str, keys: list[str], calls: list[RecordedCall]
    ) -> None:
        self.base, self.exercise, self.keys, self.calls = base, exercise, keys, calls
        self.held = frozenset((name, id(value)) for name, value in base.items())
        Replays._bases.setdefault(self.held, base)

    def answers(self, code: str | None) -> list[Answer] | None:
        """Each call's answer by the references (``code`` None) or by the program ``code``
        built on them; None for a program that does not build."""
        namespace = self.base if code is None else self._program(code)
        if namespace is None:
            return None
        found = []
        for key, call in zip(self.keys, self.calls, strict=True):
            remembered = (self.held, self.exercise, code, key)
            answer = Replays._answers.get(remembered)
            if answer is None:
                if len(Replays._answers) >= Replays.MEMORY:
                    Replays._answers.clear()
                answer = Replays._answers[remembered] = replay(namespace, call)
            found.append(answer)
        return found

    def _program(self, code: str) -> dict[str, Any] | None:
        built = (self.held, self.exercise, code)
        if built not in Replays._programs:
            Replays._programs[built] = build_program(self.base, self.exercise, code)
        return Replays._programs[built]
