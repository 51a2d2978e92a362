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

# No line is pointed at in this lesson: its mistakes' lines are not yet checked by hand
# against a corpus (the precision rule), so its words say where to look.
MISTAKES: dict[tuple[str, str], MistakeHints] = {
    ("causal_mask", "wrong_triangle"): MistakeHints(
        idea=(
            "Row i is the query, column j the key: the future, j > i, lies above the "
            "diagonal, and that is the triangle to block."
        ),
        look="Look at which triangle your mask builds.",
    ),
    ("causal_mask", "blocks_diagonal"): MistakeHints(
        idea=(
            "A token may always attend to itself; only keys strictly after the query are "
            "blocked, j > i and not j >= i."
        ),
        look="Look at where your triangle starts: on the diagonal or one step above it.",
    ),
    ("apply_causal_mask", "mask_with_zero"): MistakeHints(
        idea=(
            "A blocked score must give weight exactly 0 after softmax. A score of 0 still "
            "weighs e^0 = 1; only -inf gives e^-inf = 0."
        ),
        look="Look at the value you write into the blocked scores.",
    ),
    ("apply_causal_mask", "in_place"): MistakeHints(
        idea=(
            "The caller's scores must stay as they were: a function that hides the future "
            "returns a new tensor. The in-place variants of PyTorch's methods (with a "
            "trailing underscore) write into their input."
        ),
        look="Look for an in-place call, or an assignment into the scores you were given.",
    ),
    ("apply_causal_mask", "inverted_mask"): MistakeHints(
        idea=(
            "In this kit True means blocked, and causal_mask already has that polarity: use"
            " it as it is."
        ),
        look="Look at how the mask decides which scores become -inf.",
    ),
    ("ScaledDotProductAttention", "keys_dot_T_batched"): MistakeHints(
        idea=(
            ".T reverses every axis: [batch, heads, T, d_k] becomes [d_k, T, heads, batch]."
            " The scores need only the keys' last two axes swapped."
        ),
        look="Look at how the keys are transposed for the scores.",
    ),
    ("ScaledDotProductAttention", "mask_after_softmax"): MistakeHints(
        idea=(
            "Zeroing weights after softmax leaves rows that sum to less than 1. Set the "
            "blocked scores to -inf before softmax, so each row is normalised over the keys"
            " it may see."
        ),
        look="Look at where the mask is applied: before softmax or after it.",
    ),
    ("ScaledDotProductAttention", "dropout_on_scores"): MistakeHints(
        idea=(
            "Dropout silences some query-key connections of the attention weights, after "
            "softmax has made them sum to 1; applied to the scores, it changes what softmax"
            " normalises."
        ),
        look="Look at which tensor goes through dropout, and where.",
    ),
    ("ScaledDotProductAttention", "dropout_in_eval"): MistakeHints(
        idea=(
            "Dropout is for training only. The nn.Dropout module switches itself off in "
            "eval mode; calling a dropout function yourself does not."
        ),
        look="Look at how dropout is applied: through the layer's own module or a function.",
    ),
    ("ScaledDotProductAttention", "no_scaling"): MistakeHints(
        idea=(
            "Divide the scores by sqrt(d_k) before softmax, or wide keys make it nearly one-hot."
        ),
        look="Look at the scores you hand to softmax: are they scaled?",
    ),
    ("ScaledDotProductAttention", "divide_by_dk"): MistakeHints(
        idea=("The scale is the standard deviation of a dot product, sqrt(d_k), not d_k."),
        look="Look at how the scores are scaled.",
    ),
    ("ScaledDotProductAttention", "inverted_mask"): MistakeHints(
        idea=(
            "True means blocked: the positions where the mask is True become -inf, not the others."
        ),
        look="Look at how the mask decides which scores become -inf.",
    ),
    ("ScaledDotProductAttention", "softmax_wrong_dim"): MistakeHints(
        idea=("Each query's weights must sum to 1 over the keys: the last axis of the scores."),
        look="Look at the dim you give softmax.",
    ),
    ("ScaledDotProductAttention", "dropout_on_output"): MistakeHints(
        idea=(
            "Attention dropout acts on the weights, the query-key connections, not on the "
            "output vectors."
        ),
        look="Look at which tensor goes through dropout.",
    ),
    ("CausalAttention", "mask_not_cut"): MistakeHints(
        idea=(
            "The mask buffer is built for the longest context; a batch can be shorter, so "
            "only its top-left [T, T] block applies."
        ),
        look="Look at the mask you pass on: is it cut to the number of tokens of this input?",
    ),
    ("CausalAttention", "inverted_mask"): MistakeHints(
        idea=(
            "True means blocked, and the mask buffer already has that polarity: pass it on "
            "as it is."
        ),
        look="Look at the mask you pass to the attention.",
    ),
    ("CausalAttention", "queries_keys_swapped"): MistakeHints(
        idea=(
            "Row i of the scores belongs to query i: the queries come from W_query, the "
            "keys from W_key."
        ),
        look="Look at which projection makes your queries and which your keys.",
    ),
}
