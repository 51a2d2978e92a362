"""The hint ladder's words for lesson 1, attention from scratch in NumPy."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints

EXERCISES = {
    "softmax": ExerciseHints(
        idea=(
            "Softmax turns any scores into weights that are positive and sum to 1 along one "
            "axis. Adding the same constant to every score of a slice changes nothing, "
            "because the factor it brings appears above and below the fraction bar. That "
            "freedom is what makes a stable softmax possible: pick the constant so that no "
            "exponent can overflow."
        ),
        look=(
            "Follow one slice through your code: the exponentials, their total, the "
            "division. Each reduction (max, sum) must run along `axis` and keep its "
            "dimension (keepdims=True) so that it broadcasts back against x."
        ),
    ),
    "scale_scores": ExerciseHints(
        idea=(
            "A dot product of two d_k-wide vectors with unit-variance entries has variance "
            "d_k. Dividing by its standard deviation brings the scores back to unit scale, "
            "whatever the width: that keeps softmax out of saturation."
        ),
        look=(
            "Look at the divisor, and at the dtype of what you return: a float32 array "
            "divided by a NumPy float64 scalar comes back as float64."
        ),
    ),
    "attention_scores": ExerciseHints(
        idea=(
            "Entry [i, j] of the scores compares query i with key j, feature by feature. "
            "Written as one matrix product, the keys enter with their last two axes swapped; "
            "any leading batch axes must stay where they are."
        ),
        look=(
            "Look at how K is transposed before the product: for a [batch, T, d] array only "
            "the last two axes may swap."
        ),
    ),
    "causal_mask": ExerciseHints(
        idea=(
            "Row i of the mask is query i, column j is key j. A language model may use the "
            "past and the present token, never the future: key j is blocked exactly when "
            "j > i, and True means blocked."
        ),
        look=(
            "Print causal_mask(4) and read it row by row: True must sit strictly above the "
            "diagonal, the diagonal itself False."
        ),
    ),
    "self_attention": ExerciseHints(
        idea=(
            "Self-attention is your earlier exercises in a row: project X into queries, keys "
            "and values, score every query against every key, scale by sqrt(d_k), hide the "
            "future when causal, softmax over the keys, and average the values with those "
            "weights."
        ),
        look=(
            "Check each step against the formula softmax(Q K^T / sqrt(d_k)) V: which width "
            "scales the scores, where the mask enters, and along which axis softmax runs."
        ),
    ),
    "embed_one_hot": ExerciseHints(
        idea=(
            "A one-hot row has a single 1 at the token's id and one entry per vocabulary "
            "item. Multiplying it by E picks out exactly one row of E: the embedding is a "
            "table lookup written as a matrix product."
        ),
        look=(
            "Look at how wide your one-hot rows are: they must be as wide as E has rows "
            "(the vocabulary), and they must carry E's dtype."
        ),
    ),
}

EXP = ("call:exp",)
MASKING = ("call:where", "call:putmask", "call:place", "assign:subscript")
TRIANGLE = ("call:triu", "call:tril", "compare")

MISTAKES = {
    ("softmax", "no_max_subtraction"): MistakeHints(
        idea=(
            "exp(1000) is larger than any float, so it becomes inf, and inf / inf is NaN. "
            "Shift each slice first so that its largest score is 0: every exponent is then "
            "at most 1, and the shift cancels in the fraction."
        ),
        look="Look at what you pass to exp: the scores as they come, unshifted.",
        site=EXP,
    ),
    ("softmax", "ignores_axis"): MistakeHints(
        idea=(
            "softmax must work along any axis the caller names. A max or a sum along a fixed "
            "axis is right for one axis only."
        ),
        look="Look at every max and sum in your softmax: each must use `axis`.",
        site=("call:max", "call:amax", "call:sum"),
    ),
    ("softmax", "sum_of_raw_scores"): MistakeHints(
        idea=(
            "The denominator is what makes the weights sum to 1: it must be the total of the "
            "very numbers you divide, the exponentials."
        ),
        look="Look at the denominator: what it sums.",
        site=("call:sum", "call:reduce"),
    ),
    ("softmax", "global_max"): MistakeHints(
        idea=(
            "One maximum for the whole array stops overflow, but a slice whose scores lie far "
            "below it underflows to all zeros, and 0 / 0 is NaN. Each slice needs its own "
            "maximum."
        ),
        look="Look at the maximum you subtract: over which axis it is taken.",
        site=("call:max", "call:amax"),
    ),
    ("scale_scores", "no_scaling"): MistakeHints(
        idea="The scores must be divided by sqrt(d_k): returning them unchanged skips it.",
        look="Look at what you return: it must be divided by sqrt(d_k).",
    ),
    ("scale_scores", "divide_by_dk"): MistakeHints(
        idea=(
            "The variance of a dot product grows like d_k, so its typical size, the standard "
            "deviation, grows like sqrt(d_k). Dividing by d_k itself flattens the weights "
            "more and more as the model widens."
        ),
        look="Look at the divisor.",
        site=("op:/", "call:divide"),
    ),
    ("attention_scores", "keys_not_transposed"): MistakeHints(
        idea=(
            "Q is [T_q, d] and K is [T_k, d]: to compare query i with key j feature by "
            "feature, the features of K must run down the columns, so K enters transposed."
        ),
        look="Look at the product of Q and K.",
        site=("op:@", "call:matmul", "call:dot"),
    ),
    ("attention_scores", "keys_dot_T_batched"): MistakeHints(
        idea=(
            ".T reverses every axis: [batch, T, d] becomes [d, T, batch]. For one sequence "
            "that happens to be right; for a batch you want only the last two axes swapped."
        ),
        look="Look at the .T on the keys.",
        site=("attr:T",),
    ),
    ("causal_mask", "wrong_triangle"): MistakeHints(
        idea=(
            "Row i is the query, column j the key. The future, j > i, lies above the "
            "diagonal: that is the triangle to block."
        ),
        look="Look at which triangle your mask builds.",
        site=TRIANGLE,
    ),
    ("causal_mask", "blocks_diagonal"): MistakeHints(
        idea=(
            "A token may always attend to itself: without the diagonal the first token sees "
            "nothing at all. Only j > i is blocked, not j >= i."
        ),
        look="Look at where your triangle starts: on the diagonal, or one step above it.",
        site=TRIANGLE,
    ),
    ("self_attention", "mask_with_zero"): MistakeHints(
        idea=(
            "A blocked key must get weight exactly 0 after softmax. A score of 0 still gets "
            "weight proportional to e^0 = 1; only a score of -inf gets e^-inf = 0."
        ),
        look="Look at the value you put into the blocked scores.",
        site=MASKING,
    ),
    ("self_attention", "mask_after_softmax"): MistakeHints(
        idea=(
            "Zeroing weights after softmax leaves rows that sum to less than 1. Mask the "
            "scores before softmax, so each row is normalised over the keys it may see."
        ),
        look="Look at where the mask is applied: before softmax or after it.",
        site=MASKING,
    ),
    ("self_attention", "no_scaling"): MistakeHints(
        idea=(
            "The scores must be divided by sqrt(d_k) before softmax; without it, wide keys "
            "make softmax nearly one-hot."
        ),
        look="Look at the scores you hand to softmax: are they scaled?",
        site=("call:softmax",),
    ),
    ("self_attention", "divide_by_dk"): MistakeHints(
        idea="The scale is the standard deviation of a dot product, sqrt(d_k), not d_k.",
        look="Look at how the scores are scaled.",
        site=("op:/", "call:scale_scores"),
    ),
    ("self_attention", "scale_by_d_in"): MistakeHints(
        idea=(
            "The scores are dot products of queries and keys, so their size is set by the "
            "keys' width d_k, the columns of W_k, not by X's width d_in."
        ),
        look="Look at the width you scale the scores by.",
        site=("op:/", "call:scale_scores"),
    ),
    ("self_attention", "inverted_mask"): MistakeHints(
        idea=(
            "In this kit a mask is True where attention is blocked, and causal_mask already "
            "has that polarity: use it as it is, without negating it."
        ),
        look="Look at how the mask decides which scores become -inf.",
        site=MASKING,
    ),
    ("self_attention", "softmax_wrong_dim"): MistakeHints(
        idea=(
            "Each query spreads its attention over the keys. The keys run along the last "
            "axis of the scores, so that is where each row must sum to 1."
        ),
        look="Look at the axis you give softmax.",
        site=("call:softmax",),
    ),
    ("embed_one_hot", "one_hot_over_features"): MistakeHints(
        idea=(
            "A one-hot row has one entry per vocabulary item, as many as E has rows. Built "
            "as wide as E has columns, it cannot pick a row of E."
        ),
        look="Look at the width of the one-hot rows you build.",
        site=("call:eye", "call:arange", "call:zeros", "call:identity"),
    ),
}
