"""The hint ladder's words for lesson 3, causal attention."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints

EXERCISES = {
    "causal_mask": ExerciseHints(
        idea=(
            "Row i is query i, column j is key j. The future, j > i, is blocked: True "
            "strictly above the diagonal, False on it and below, as a torch.bool tensor."
        ),
        look="Print causal_mask(4) and read it row by row, and check its dtype.",
    ),
    "apply_causal_mask": ExerciseHints(
        idea=(
            "A blocked score must get weight exactly 0 after softmax, and only -inf does "
            "that. The scores you are given stay as they are: return a new tensor."
        ),
        look=(
            "Look at the value written into the blocked positions, at which positions those "
            "are, and whether the input tensor itself is changed."
        ),
    ),
    "ScaledDotProductAttention": ExerciseHints(
        idea=(
            "softmax(q k^T / sqrt(d_k)) v, where a mask sets the blocked scores to -inf "
            "before softmax, a row with nothing left to see gets zero weights, and dropout "
            "acts on the weights, the query-key connections."
        ),
        look=(
            "Walk through forward in order: the scores (keys transposed on their last two "
            "axes), the scale, the mask, softmax over the keys, dropout, the product with v."
        ),
    ),
    "CausalAttention": ExerciseHints(
        idea=(
            "One head of causal self-attention: three Linear projections of x, then scaled "
            "dot-product attention with the causal mask cut to the sequence's length."
        ),
        look=(
            "Check which projection makes the queries and which the keys, and that the mask "
            "buffer is cut to the number of tokens of this call."
        ),
    ),
}

MISTAKES: dict[tuple[str, str], MistakeHints] = {}
