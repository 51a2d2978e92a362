"""The hint ladder's words for lesson 5, watch attention learn."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints
from .lesson_04 import MISTAKES as LESSON_4

EXERCISES = {
    "MultiHeadAttention": ExerciseHints(
        idea=(
            "Lesson 4's layer, with two additions: it keeps the attention weights of its "
            "last call so they can be drawn, and it takes a padding mask that blocks keys "
            "as the causal mask does. A query that may see nothing gets zero weights, never NaN."
        ),
        look="Look at how the padding mask joins the causal one, and what you keep after softmax.",
    ),
    "TinyTransformer": ExerciseHints(
        idea=(
            "Token embeddings plus position embeddings, then each block adds what attention "
            "computes to what came in (a residual), then the output head turns each "
            "position into logits over the vocabulary."
        ),
        look="Check the positions are added, and that each block adds its output to its input.",
    ),
    "train_step": ExerciseHints(
        idea=(
            "One step of training: clear the old gradients, compute the mean cross-entropy "
            "of the logits against the targets over every position, backpropagate, step."
        ),
        look="Check the order of the steps, and that the loss is a mean, not a sum.",
    ),
    "diagonal_score": ExerciseHints(
        idea=(
            "How much each query attends to the key `offset` steps before it: the entries "
            "weights[..., i, i - offset], averaged over the queries that have such a key."
        ),
        look="Print the entries you average for a small T and offset 1: which diagonal are they?",
    ),
    "first_token_score": ExerciseHints(
        idea=(
            "How much the queries attend to token 0, averaged over queries 1 onwards (query "
            "0 can only see token 0, so it says nothing)."
        ),
        look="Check which queries you average over.",
    ),
    "induction_score": ExerciseHints(
        idea=(
            "An induction head looks at the token that followed the previous occurrence of "
            "the current token: in a sequence repeating with period p, that is key i - p + 1."
        ),
        look="Print the key index you read for query i: it is one past the previous occurrence.",
    ),
    "padding_causal_mask": ExerciseHints(
        idea=(
            "Padding sits on the left: sequence b's real tokens are its last lengths[b]. "
            "A key is blocked when it is in the future or is padding."
        ),
        look="Print the mask for two short lengths and read which keys are padding.",
    ),
    "softmax_jacobian_norm": ExerciseHints(
        idea=(
            "The Jacobian of softmax is diag(s) - s s^T: a change in one score raises its "
            "own weight and lowers every other one. Its size shows how saturated softmax is."
        ),
        look="Build diag(s) and the outer product s s^T separately and print their shapes.",
    ),
    "permutation_gap": ExerciseHints(
        idea=(
            "Without positions, attention treats the tokens as a set: permuting the input "
            "permutes the output the same way. The gap measures how far a layer is from that."
        ),
        look="Compare layer(x[:, perm]) with layer(x)[:, perm], and take the largest difference.",
    ),
}

# No line is pointed at in this lesson: its mistakes' lines are not yet checked by hand
# against a corpus (the precision rule), so its words say where to look.
MISTAKES: dict[tuple[str, str], MistakeHints] = {
    ("MultiHeadAttention", "weights_not_kept"): MistakeHints(
        idea=(
            "The lesson draws what each head looks at, so the layer keeps the weights of "
            "its last call (detached) on itself."
        ),
        look="Look at what you do with the weights right after softmax.",
    ),
    ("MultiHeadAttention", "padding_ignored"): MistakeHints(
        idea=(
            "A key is blocked when it is in the future or is padding: the two masks combine"
            " with a logical or."
        ),
        look="Look at the mask you apply to the scores: does the padding mask reach it?",
    ),
    ("MultiHeadAttention", "nan_for_blocked_rows"): MistakeHints(
        idea=(
            "A query that may see no key has a row of -inf scores, and softmax of that is "
            "0/0. Such a row gets zero weights instead."
        ),
        look="Look at what happens after softmax to a row that was fully blocked.",
    ),
    ("TinyTransformer", "no_positions"): MistakeHints(
        idea=(
            "Attention alone treats the tokens as a set: each position 0..T-1 has its own "
            "learned vector, added to the token's."
        ),
        look="Look at where the embeddings are made: is the position embedding added?",
    ),
    ("TinyTransformer", "no_residual"): MistakeHints(
        idea=(
            "A residual block adds what the layer computed to what came in; it does not replace it."
        ),
        look="Look at what each block returns.",
    ),
    ("train_step", "gradients_not_cleared"): MistakeHints(
        idea=(
            "backward() adds to the gradients already there: clear them before computing "
            "new ones, or each step also applies the old ones."
        ),
        look="Look at the order of the steps: where are the gradients cleared?",
    ),
    ("train_step", "summed_loss"): MistakeHints(
        idea=(
            "Averaging the cross-entropy over every position keeps the loss and the step "
            "size independent of the batch and the length."
        ),
        look="Look at how the loss is reduced over the positions.",
    ),
    ("diagonal_score", "above_the_diagonal"): MistakeHints(
        idea=(
            "The key offset steps back from query i is i - offset: below the diagonal, in "
            "the past a causal head may see."
        ),
        look="Look at which entries you read: i - offset or i + offset.",
    ),
    ("first_token_score", "counts_query_zero"): MistakeHints(
        idea=(
            "Query 0 can see only token 0, so it always gives it full weight and says "
            "nothing about the head: start from query 1."
        ),
        look="Look at which queries you average over.",
    ),
    ("induction_score", "previous_occurrence"): MistakeHints(
        idea=(
            "An induction head attends to the token after the previous occurrence, i - "
            "period + 1, which predicts what comes next."
        ),
        look="Look at the key index you read for each query.",
    ),
    ("padding_causal_mask", "right_padding"): MistakeHints(
        idea=(
            "Left padding puts the real tokens at the end: the first num_tokens - "
            "lengths[b] positions are padding."
        ),
        look="Look at which positions your mask treats as padding.",
    ),
    ("softmax_jacobian_norm", "no_outer_product"): MistakeHints(
        idea=(
            "J = diag(s) - s s^T: raising one score raises its own weight and lowers all "
            "the others, and both parts count."
        ),
        look="Look at how you build the Jacobian.",
    ),
    ("permutation_gap", "mean_not_max"): MistakeHints(
        idea=("The gap is the worst case, the largest absolute difference, not the average one."),
        look="Look at how you reduce the differences to one number.",
    ),
}

# This lesson's layer is lesson 4's: the mistakes of the operations it performs (scaling,
# masking, softmax, dropout, head split and merge; operations.toml) are named here too, in
# the same words.
MISTAKES.update({key: words for key, words in LESSON_4.items() if key[0] == "MultiHeadAttention"})
