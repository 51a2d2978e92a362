"""The hint ladder's words for lesson 2, self-attention in PyTorch."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints
from .lesson_01 import EXP

EXERCISES = {
    "softmax": ExerciseHints(
        idea=(
            "The same softmax as lesson 1, now on tensors: exponentials divided by their "
            "total along `dim`, with each slice shifted by its own maximum first so that "
            "nothing overflows. You build it from exp and sum; the library's softmax is "
            "what your answer is compared with, not part of it."
        ),
        look=(
            "Follow one slice: the maximum along `dim` (keepdim=True), the shifted "
            "exponentials, their total along `dim`, the division."
        ),
    ),
    "simple_attention_loop": ExerciseHints(
        idea=(
            "Without trainable weights every token is its own query, key and value. Score "
            "token i against every token j, turn row i of the scores into weights with "
            "softmax, and make context vector i the weighted sum of all the inputs."
        ),
        look=(
            "Check the loops against the formula: scores[i, j] = x_i . x_j over every pair, "
            "and context_i = sum over all j of weights[i, j] * x_j."
        ),
    ),
    "simple_attention_matrix": ExerciseHints(
        idea=(
            "The loop version as two matrix products: the scores are the inputs times their "
            "own transpose, the context is the weights times the inputs. Written with the "
            "token and feature axes swapped explicitly, one line serves a batch too."
        ),
        look=(
            "Look at how the inputs are transposed for the scores, and along which dim "
            "softmax runs."
        ),
    ),
    "SelfAttention_v1": ExerciseHints(
        idea=(
            "Trainable projections give each token three different roles: its query "
            "(x @ W_query), its key (x @ W_key) and its value (x @ W_value). Then it is "
            "scaled dot-product attention: softmax(Q K^T / sqrt(d_k)) V, for one sequence "
            "or a batch."
        ),
        look=(
            "Check which matrix makes the queries and which the keys, how the keys are "
            "transposed for a batch, and the width you scale by."
        ),
    ),
    "SelfAttention_v2": ExerciseHints(
        idea=(
            "v2 computes what v1 computes, with nn.Linear layers as the projections. Calling "
            "a Linear layer applies its weight and, when it has one, its bias."
        ),
        look="Check how you apply the three projections, then the attention itself as in v1.",
    ),
    "copy_v2_weights_into_v1": ExerciseHints(
        idea=(
            "nn.Linear stores its weight as [d_out, d_in] and computes x @ weight.T; v1 keeps "
            "[d_in, d_out] and computes x @ W. The same map therefore needs the transpose, "
            "and a bias has nowhere to go in v1."
        ),
        look="Look at the layout of what you copy into each of v1's matrices, and at biases.",
    ),
}

SCORE_SCALE = ("op:/", "call:div", "call:divide")
SOFTMAX = ("call:softmax",)

MISTAKES = {
    ("softmax", "no_max_subtraction"): MistakeHints(
        idea=(
            "exp of a large score overflows to inf, and inf / inf is NaN. Subtract each "
            "slice's maximum before exp: the shift cancels in the fraction, and every "
            "exponent is then at most 0."
        ),
        look="Look at what you pass to exp: the scores as they come, unshifted.",
        site=EXP,
    ),
    ("softmax", "ignores_dim"): MistakeHints(
        idea="softmax must work along whichever dim the caller names, not a fixed one.",
        look="Look at every max and sum in your softmax: each must use `dim`.",
        site=("call:max", "call:amax", "call:sum"),
    ),
    ("softmax", "library_softmax"): MistakeHints(
        idea=(
            "The numbers are right, but the exercise is to build softmax yourself from exp "
            "and sum: a library softmax does the work you are asked to write."
        ),
        look="Look for the call of a library softmax.",
        site=SOFTMAX,
    ),
    ("softmax", "global_max"): MistakeHints(
        idea=(
            "One maximum for the whole tensor stops overflow, but a slice far below it "
            "underflows to zeros, and 0 / 0 is NaN. Each slice needs its own maximum, "
            "taken along `dim`."
        ),
        look="Look at the maximum you subtract: along which dim it is taken.",
        site=("call:max", "call:amax"),
    ),
    ("simple_attention_loop", "sum_of_raw_scores"): MistakeHints(
        idea=(
            "The weights of query i are the softmax of its scores, not the scores divided "
            "by their sum: raw scores can be negative, and then no longer make an average."
        ),
        look="Look at how you turn a row of scores into weights: what you divide by.",
        site=("call:sum", "call:reduce"),
    ),
    ("simple_attention_loop", "loop_off_by_one"): MistakeHints(
        idea=(
            "Each context vector averages over every token, 0 to n-1. range(n) already "
            "stops before n: anything shorter leaves a token out."
        ),
        look="Look at the range of the loop that sums over the tokens.",
        site=("call:range",),
    ),
    ("simple_attention_loop", "softmax_wrong_dim"): MistakeHints(
        idea=(
            "Row i of the weights belongs to query i and must sum to 1 over the keys, the "
            "last dim of the scores."
        ),
        look="Look at the dim you give softmax.",
        site=SOFTMAX,
    ),
    ("simple_attention_matrix", "inputs_dot_T_batched"): MistakeHints(
        idea=(
            ".T reverses every axis: a batch [B, T, d] becomes [d, T, B]. Swap only the "
            "token and feature axes, the last two."
        ),
        look="Look at the .T on the inputs.",
        site=("attr:T",),
    ),
    ("simple_attention_matrix", "softmax_wrong_dim"): MistakeHints(
        idea=("Each query's weights must sum to 1 over the keys: the last dim of the scores."),
        look="Look at the dim you give softmax.",
        site=SOFTMAX,
    ),
    ("SelfAttention_v1", "keys_dot_T_batched"): MistakeHints(
        idea=(
            ".T reverses every axis of [batch, T, d_out]. The scores need only the keys' "
            "token and feature axes swapped."
        ),
        look="Look at the .T on the keys.",
        site=("attr:T",),
    ),
    ("SelfAttention_v1", "no_scaling"): MistakeHints(
        idea=(
            "Dot products grow with the keys' width. Divide the scores by sqrt(d_k) before "
            "softmax, or the weights come out too peaked."
        ),
        look="Look at the scores you hand to softmax: are they scaled?",
        site=SOFTMAX,
    ),
    ("SelfAttention_v1", "divide_by_dk"): MistakeHints(
        idea="The scale is the standard deviation of a dot product, sqrt(d_k), not d_k.",
        look="Look at how the scores are scaled.",
        site=SCORE_SCALE,
    ),
    ("SelfAttention_v1", "scale_by_d_in"): MistakeHints(
        idea=(
            "The scores are dot products of queries and keys, so the keys' width d_out sets "
            "their size, not the input's width d_in."
        ),
        look="Look at the width you scale the scores by.",
        site=SCORE_SCALE,
    ),
    ("SelfAttention_v1", "queries_keys_swapped"): MistakeHints(
        idea=(
            "Row i of the scores belongs to query i: the queries come from W_query and stand "
            "on the left of the product, the keys from W_key on the right."
        ),
        look="Look at which weight matrix makes your queries and which your keys.",
        site=("attr:W_query",),
    ),
    ("SelfAttention_v1", "softmax_wrong_dim"): MistakeHints(
        idea="Each query's weights must sum to 1 over the keys: the last dim of the scores.",
        look="Look at the dim you give softmax.",
        site=SOFTMAX,
    ),
    ("SelfAttention_v2", "qkv_bias_ignored"): MistakeHints(
        idea=(
            "An nn.Linear layer adds its bias when it has one. Multiplying by its .weight "
            "yourself leaves the bias out."
        ),
        look="Look at how you apply the projections: the layers themselves, or their weights.",
        site=("attr:weight",),
    ),
    ("SelfAttention_v2", "no_scaling"): MistakeHints(
        idea="Divide the scores by sqrt(d_k) before softmax, as in v1.",
        look="Look at the scores you hand to softmax: are they scaled?",
        site=SOFTMAX,
    ),
    ("SelfAttention_v2", "divide_by_dk"): MistakeHints(
        idea="The scale is the standard deviation of a dot product, sqrt(d_k), not d_k.",
        look="Look at how the scores are scaled.",
        site=SCORE_SCALE,
    ),
    ("SelfAttention_v2", "scale_by_d_in"): MistakeHints(
        idea="The keys' width d_out sets the size of the scores, not the input's width d_in.",
        look="Look at the width you scale the scores by.",
        site=SCORE_SCALE,
    ),
    ("SelfAttention_v2", "queries_keys_swapped"): MistakeHints(
        idea=(
            "The queries come from W_query and stand on the left of the product, the keys "
            "from W_key on the right."
        ),
        look="Look at which layer makes your queries and which your keys.",
        site=("attr:W_query",),
    ),
    ("SelfAttention_v2", "softmax_wrong_dim"): MistakeHints(
        idea="Each query's weights must sum to 1 over the keys: the last dim of the scores.",
        look="Look at the dim you give softmax.",
        site=SOFTMAX,
    ),
    ("copy_v2_weights_into_v1", "weights_not_transposed"): MistakeHints(
        idea=(
            "A Linear weight is [d_out, d_in]; v1's matrix is [d_in, d_out]. The same map "
            "needs the transpose, even when the two widths are equal and the shapes fit."
        ),
        look="Look at each matrix you copy into v1: is it transposed?",
        site=("attr:weight",),
    ),
    ("copy_v2_weights_into_v1", "bias_not_refused"): MistakeHints(
        idea=(
            "v1 has no bias, so a v2 with biases computes something v1 cannot: copying its "
            "weights alone gives a v1 that silently disagrees. The contract asks you to "
            "refuse that case."
        ),
        look="Look at what your function does before copying when v2 has biases.",
    ),
}
