STORY = "tensordot and math's star import; times cells with %time and reads help with ?"
PATTERNS = ["tensordot", "star-import", "magics", "help-syntax"]
SAVE = {}
EDITS = [
    (
        "below",
        "setup",
        """
from math import *
np.exp?
""",
    ),
    (
        "fill",
        "softmax",
        """
x = np.asarray(x)
m = np.max(x, axis=axis, keepdims=True)
m = np.where(m == -inf, 0, m).astype(x.dtype)
num = np.exp(x - m)
den = np.sum(num, axis=axis, keepdims=True)
return np.divide(num, den, out=np.zeros_like(num), where=den > 0)
""",
    ),
    (
        "fill",
        "scale_scores",
        """
return scores * (1 / sqrt(d_k))
""",
    ),
    (
        "fill",
        "attention_scores",
        """
if Q.ndim == 2:
    return np.tensordot(Q, K, axes=([1], [1]))
return np.stack([attention_scores(q, k) for q, k in zip(Q, K)])
""",
    ),
    (
        "fill",
        "causal_mask",
        """
i, j = np.indices((num_tokens, num_tokens))
return j > i
""",
    ),
    (
        "below",
        "test_scale_scores",
        """
%time scale_scores(np.ones((64, 64)), 64)
""",
    ),
    (
        "fill",
        "self_attention",
        """
Q = np.tensordot(X, W_q, axes=1)
K = np.tensordot(X, W_k, axes=1)
V = np.tensordot(X, W_v, axes=1)
S = scale_scores(attention_scores(Q, K), W_q.shape[1])
if causal:
    S = S + np.where(causal_mask(S.shape[-1]), -inf, 0.0).astype(S.dtype)
A = softmax(S, axis=-1)
return A @ V, A
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
ids = np.asarray(token_ids)
hot = (ids[..., np.newaxis] == np.arange(len(E))).astype(E.dtype)
return np.tensordot(hot, E, axes=1)
""",
    ),
]
