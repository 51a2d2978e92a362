"""Where visible checks register themselves, keyed by (assignment slug, exercise name)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..assignments import ASSIGNMENTS
from ..probe import Probe

CheckFunction = Callable[[Probe], None]


@dataclass(frozen=True)
class VisibleCheck:
    slug: str
    exercise: str
    description: str
    function: CheckFunction
    # Clauses of the exercise's released docstring this check makes visible, word for
    # word (a kit test holds every dtype clause to having one).
    contract: tuple[str, ...] = ()


REGISTRY: dict[tuple[str, str], list[VisibleCheck]] = {}


def visible(
    slug: str, exercise: str, description: str, *, contract: tuple[str, ...] = ()
) -> Callable[[CheckFunction], CheckFunction]:
    """Register ``function(probe)`` as a visible check of ``exercise`` in ``slug``.

    ``contract`` names the clauses of the exercise's docstring that the check enforces.
    """
    ASSIGNMENTS[slug].exercise(exercise)  # a misspelt name fails here, at import

    def register(function: CheckFunction) -> CheckFunction:
        REGISTRY.setdefault((slug, exercise), []).append(
            VisibleCheck(slug, exercise, description, function, tuple(contract))
        )
        return function

    return register
