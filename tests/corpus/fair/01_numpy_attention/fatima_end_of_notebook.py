# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "works in a scratch area at the end; deleted the visible checks she had already run"
PATTERNS = ["answer-at-end", "cells-deleted-or-edited"]
SAVE = {}
EDITS = [
    ("delete", "lesson.check(scale_scores)", None),
    ("delete", "lesson.check(causal_mask)", None),
    ("edit", "lesson.check(embed_one_hot)", ("lesson.check(embed_one_hot)", "# checked below")),
    (
        "end",
        None,
        """
# ---- my answers -------------------------------------------------------------
def _neg_inf_safe_max(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return np.where(np.isneginf(m), np.zeros_like(m), m)


def softmax(x, axis=-1):
    z = np.exp(x - _neg_inf_safe_max(x, axis))
    s = z.sum(axis=axis, keepdims=True)
    return z / np.where(s == 0, np.ones_like(s), s)


def scale_scores(scores, d_k):
    return scores / d_k ** 0.5


def attention_scores(Q, K):
    return Q @ K.swapaxes(-1, -2)


def causal_mask(num_tokens):
    return np.triu(np.ones((num_tokens, num_tokens)), k=1).astype(bool)


def masked_scores(scores, mask):
    return np.where(mask, -np.inf, scores)


def self_attention(X, W_q, W_k, W_v, causal=False):
    scores = scale_scores(attention_scores(X @ W_q, X @ W_k), W_k.shape[-1])
    if causal:
        scores = masked_scores(scores, causal_mask(X.shape[-2]))
    weights = softmax(scores)
    return weights @ (X @ W_v), weights


def embed_one_hot(token_ids, E):
    one_hot = np.identity(E.shape[0], dtype=E.dtype)[token_ids]
    return one_hot @ E
""",
    ),
    (
        "end",
        None,
        """
for exercise in (softmax, scale_scores, attention_scores, causal_mask, self_attention, embed_one_hot):
    lesson.check(exercise)
""",
    ),
]
