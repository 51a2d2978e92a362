STORY = "keeps her numerics in a helper module written by %%writefile and imported by the notebook"
PATTERNS = ["writefile-helper", "magics"]
SAVE = {}
EDITS = [
    (
        "above",
        "softmax",
        """
%%writefile attention_helpers.py
import numpy as np


def stable_exp_normalise(x, axis):
    x = np.asarray(x)
    top = np.max(x, axis=axis, keepdims=True)  # -inf where a slice is all -inf
    top = np.where(np.isneginf(top), 0, top).astype(x.dtype)
    e = np.exp(x - top)
    total = e.sum(axis=axis, keepdims=True)
    return np.where(total > 0, e / np.where(total > 0, total, 1), 0).astype(x.dtype)


def divide_by_root(values, width):
    return np.asarray(values) / float(np.sqrt(width))
""",
    ),
    (
        "above",
        "softmax",
        """
import attention_helpers
""",
    ),
    (
        "fill",
        "softmax",
        """
return attention_helpers.stable_exp_normalise(x, axis)
""",
    ),
    (
        "fill",
        "scale_scores",
        """
from attention_helpers import divide_by_root  # imported when called, from the working folder

return divide_by_root(scores, d_k)
""",
    ),
    (
        "fill",
        "attention_scores",
        """
return np.matmul(Q, np.swapaxes(K, -2, -1))
""",
    ),
    (
        "fill",
        "causal_mask",
        """
rows, cols = np.indices((num_tokens, num_tokens))
return cols > rows
""",
    ),
    (
        "fill",
        "self_attention",
        """
Q, K, V = np.matmul(X, W_q), np.matmul(X, W_k), np.matmul(X, W_v)
scores = scale_scores(attention_scores(Q, K), W_k.shape[1])
if causal:
    scores = np.where(causal_mask(X.shape[-2]), -np.inf, scores)
weights = softmax(scores, axis=-1)
return np.matmul(weights, V), weights
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
ids = np.asarray(token_ids)
return np.eye(E.shape[0], dtype=E.dtype)[ids] @ E
""",
    ),
]
