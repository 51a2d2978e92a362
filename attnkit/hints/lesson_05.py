"""The hint ladder's words for lesson 5, watch attention learn."""

from __future__ import annotations

from . import ExerciseHints, MistakeHints

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

MISTAKES: dict[tuple[str, str], MistakeHints] = {}
