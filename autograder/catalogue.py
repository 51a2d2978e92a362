"""The catalogue of classic mistakes (``mistakes.toml``) and the grader's diagnosis with it.

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
from typing import Any

from attnkit.diagnosis import (
    MistakeInfo,
    RecordedCall,
    explains,
    replay,
    single_out,
)

CATALOGUE = Path(__file__).resolve().parent / "mistakes.toml"


@dataclass(frozen=True)
class Mistake(MistakeInfo):
    template: str = ""
    """The code, with ``$placeholders`` when the mistake is a family."""
    family: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Placeholder name and the values it takes; every combination is one program."""

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
def load_mistakes(path: Path = CATALOGUE) -> tuple[Mistake, ...]:
    """Every mistake of the catalogue, one per exercise where it can be made."""
    with path.open("rb") as handle:
        entries = tomllib.load(handle)["mistake"]
    mistakes = [mistake for entry in entries for mistake in expand(entry)]
    keys = [m.key for m in mistakes]
    if len(set(keys)) != len(keys):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise ValueError(f"{path.name}: mistakes defined twice: {twice}")
    return tuple(mistakes)


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


def variants(base: Mapping[str, Any], mistake: Mistake) -> Iterator[dict[str, Any]]:
    """Every program of the mistake's family built on ``base`` (those that compile)."""
    for code in mistake.programs():
        try:
            namespace = build_variant(base, mistake.exercise, code)
        except Exception:
            continue
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
    correct = [replay(base, c) for c in answered]

    def explained(mistake: Mistake) -> bool:
        return any(
            explains(submission, correct, [replay(variant, c) for c in answered])
            for variant in variants(base, mistake)
        )

    return single_out(mistakes_for(slug, exercise), submission, explained)
