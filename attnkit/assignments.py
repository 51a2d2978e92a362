"""The four assignments and their exercises: the one list every other part reads.

An *exercise* is a name the student defines in a solution cell (a function, a class
whose methods they complete, or a constant). The self-check, the hidden suites, the
grader and the release tooling all look exercises up here, so a name is spelled once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


ASSIGNMENTS: dict[str, Assignment] = {
    a.slug: a
    for a in (
        Assignment(
            "01_numpy_attention",
            "Attention from scratch in NumPy",
            (
                Exercise("softmax", "numerically stable softmax over any axis", SOFTMAX_CALLS),
                Exercise("scale_scores", "divide scores by sqrt(d_k)"),
                Exercise("attention_scores", "Q K^T for batched inputs"),
                Exercise("causal_mask", "bool [T, T] mask, True above the diagonal"),
                Exercise(
                    "self_attention",
                    "single-head attention, optional causal mask",
                    uses=("softmax", "scale_scores", "attention_scores", "causal_mask"),
                ),
                Exercise("embed_one_hot", "one-hot rows times the embedding matrix"),
            ),
            framework="numpy",
        ),
        Assignment(
            "02_self_attention",
            "Self-attention in PyTorch",
            (
                Exercise("softmax", "softmax(x, dim) from exp and sum", SOFTMAX_CALLS),
                Exercise(
                    "simple_attention_loop",
                    "attention without weights, with loops",
                    uses=("softmax",),
                ),
                Exercise(
                    "simple_attention_matrix",
                    "attention without weights, as matmuls",
                    uses=("softmax",),
                ),
                Exercise(
                    "SelfAttention_v1",
                    "SelfAttention_v1.forward, batched",
                    ATTENTION_CALLS,
                    uses=("softmax",),
                ),
                Exercise(
                    "SelfAttention_v2",
                    "SelfAttention_v2.forward with nn.Linear",
                    ATTENTION_CALLS,
                    uses=("softmax",),
                ),
                Exercise("copy_v2_weights_into_v1", "move v2's weights into a v1"),
            ),
        ),
        Assignment(
            "03_causal_attention",
            "Causal attention",
            (
                Exercise("causal_mask", "bool [T, T] mask, True above the diagonal"),
                Exercise(
                    "apply_causal_mask", "masked_fill the future with -inf", uses=("causal_mask",)
                ),
                Exercise(
                    "ScaledDotProductAttention",
                    "ScaledDotProductAttention.forward -> (output, weights)",
                    ATTENTION_CALLS,
                ),
                Exercise(
                    "CausalAttention",
                    "CausalAttention.forward",
                    ATTENTION_CALLS,
                    uses=("causal_mask", "ScaledDotProductAttention"),
                ),
            ),
        ),
        Assignment(
            "04_multihead_attention",
            "Multi-head attention",
            (
                Exercise(
                    "MultiHeadAttentionWrapper",
                    "MultiHeadAttentionWrapper.forward",
                    ATTENTION_CALLS,
                ),
                Exercise(
                    "MultiHeadAttention",
                    "MultiHeadAttention.forward with the head split",
                    ATTENTION_CALLS,
                ),
                Exercise(
                    "wrapper_d_out",
                    "book exercise 3.2: d_out for 2 output features",
                    uses=("MultiHeadAttentionWrapper",),
                ),
                Exercise(
                    "gpt2_attention_parameters",
                    "book exercise 3.3: a GPT-2-sized layer's parameters",
                ),
            ),
        ),
    )
}


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
