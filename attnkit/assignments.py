"""The assignments and their exercises: the one list every other part reads.

An *exercise* is a name the student defines in a solution cell (a function, a class
whose methods they complete, or a constant). The self-check, the hidden suites, the
grader and the release tooling all look exercises up here, so a name is spelled once.

The assignments' titles are written here. Their exercises come from
:mod:`attnkit.registry_data`, which ``attnkit generate`` writes from the declaration on
each reference answer (its task line, forbidden calls and the exercises it uses) and the
order of the source notebook's solution cells; ``attnkit generate --check`` fails when it
is stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import registry_data

SOFTMAX_CALLS = (
    "torch.softmax",
    "torch.nn.functional.softmax",
    "torch.Tensor.softmax",
    "scipy.special.softmax",
)
ATTENTION_CALLS = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.MultiheadAttention",
)


@dataclass(frozen=True)
class Exercise:
    name: str
    """What the student defines, e.g. ``softmax`` or ``SelfAttention_v1``."""
    task: str
    """One line shown in tables: what to implement."""
    forbidden: tuple[str, ...] = ()
    """Library calls that would skip the point of the exercise."""
    uses: tuple[str, ...] = ()
    """Earlier exercises this one calls: a mistake there can make this one fail too."""


@dataclass(frozen=True)
class Assignment:
    slug: str
    title: str
    exercises: tuple[Exercise, ...] = field(default_factory=tuple)
    framework: str = "torch"
    """Which library the exercises return: "numpy" arrays or "torch" tensors."""

    def dependents(self, name: str) -> set[str]:
        """Exercises that use ``name``, directly or through another exercise."""
        found: set[str] = set()
        frontier = {name}
        while frontier:
            frontier = {e.name for e in self.exercises if set(e.uses) & frontier} - found
            found |= frontier
        return found

    def exercise(self, name: str) -> Exercise:
        for exercise in self.exercises:
            if exercise.name == name:
                return exercise
        known = ", ".join(e.name for e in self.exercises)
        raise KeyError(f"{self.slug} has no exercise {name!r} (it has: {known})")


def table_exercises(slug: str) -> tuple[Exercise, ...]:
    """The exercises of ``slug`` as the generated table lists them, in notebook order."""
    return tuple(
        Exercise(row["name"], row["task"], tuple(row["forbidden"]), tuple(row["uses"]))
        for row in registry_data.EXERCISES.get(slug, [])
    )


LESSONS: tuple[tuple[str, str, str], ...] = (
    ("01_numpy_attention", "Attention from scratch in NumPy", "numpy"),
    ("02_self_attention", "Self-attention in PyTorch", "torch"),
    ("03_causal_attention", "Causal attention", "torch"),
    ("04_multihead_attention", "Multi-head attention", "torch"),
    ("05_watch_attention_learn", "Watch attention learn", "torch"),
    ("06_attention_at_inference", "Attention at inference", "torch"),
    ("07_flash_attention", "FlashAttention on a CPU", "torch"),
)
"""(slug, title, framework) of each assignment, in teaching order."""


def load_assignments() -> dict[str, Assignment]:
    """The assignments: titles from :data:`LESSONS`, exercises from the generated table."""
    return {
        slug: Assignment(slug, title, table_exercises(slug), framework)
        for slug, title, framework in LESSONS
    }


ASSIGNMENTS: dict[str, Assignment] = load_assignments()


def get_assignment(slug_or_number: str) -> Assignment:
    """Look an assignment up by slug (``02_self_attention``) or number (``2``, ``02``)."""
    if slug_or_number in ASSIGNMENTS:
        return ASSIGNMENTS[slug_or_number]
    for slug, assignment in ASSIGNMENTS.items():
        if slug_or_number.isdigit() and int(slug.split("_")[0]) == int(slug_or_number):
            return assignment
    known = ", ".join(ASSIGNMENTS)
    raise KeyError(f"unknown assignment {slug_or_number!r}; the assignments are: {known}")


def assignment_in_metadata(notebook: object) -> str | None:
    """The assignment a notebook's own metadata names (``metadata.attnkit.assignment``), if it
    names a known one: what the notebook says it is, whatever its file is called."""
    metadata = notebook.get("metadata") if isinstance(notebook, dict) else None
    kit = metadata.get("attnkit") if isinstance(metadata, dict) else None
    slug = kit.get("assignment") if isinstance(kit, dict) else None
    return slug if isinstance(slug, str) and slug in ASSIGNMENTS else None
