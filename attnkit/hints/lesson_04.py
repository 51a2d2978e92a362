"""The hint ladder's words for lesson 4, multi-head attention."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints

EXERCISES = {
    "MultiHeadAttentionWrapper": ExerciseHints(
        idea=(
            "Several independent heads look at the same x; their outputs are joined along "
            "the feature axis, head 0 first, so each token's vector holds every head's view."
        ),
        look="Look at the order you join the heads in, and along which axis.",
    ),
    "wrapper_d_out": ExerciseHints(
        idea=(
            "The wrapper's output width is the number of heads times each head's d_out. "
            "Work backwards from the width you want."
        ),
        look="Write the output width as heads x d_out and solve for d_out.",
    ),
    "MultiHeadAttention": ExerciseHints(
        idea=(
            "One projection per role for all heads at once, then split its width into "
            "[heads, head_dim] and move the head axis before the tokens, so each head "
            "attends on its own. Scale by sqrt(head_dim), merge the heads back in the same "
            "order, and end with out_proj."
        ),
        look=(
            "Print the shape after every step: the split (view, then transpose), the "
            "scores, the merge (transpose back, then reshape), and the final projection."
        ),
    ),
    "gpt2_attention_parameters": ExerciseHints(
        idea=(
            "Count what the layer learns: three d_in x d_out projection matrices (no bias "
            "here), and the output projection with its weight and its bias."
        ),
        look="Add the parts one by one; check against sum(p.numel() for p in layer.parameters()).",
    ),
}

MISTAKES: dict[tuple[str, str], MistakeHints] = {}
