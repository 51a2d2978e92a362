STORY = "VS Code on Windows (CRLF), renamed file, defensive asserts and warnings in every function"
PATTERNS = [
    "vscode-save",
    "crlf",
    "renamed-file",
    "assert-in-function",
    "warning-in-function",
    "float32-contract",
]
SAVE = {"file": "attention_homework_1.ipynb", "editor": "vscode", "crlf": True}
EDITS = [
    ("below", "setup", "import warnings"),
    (
        "fill",
        "softmax",
        """
x = np.asarray(x)
assert np.issubdtype(x.dtype, np.floating), "softmax wants floats"
if np.isnan(x).any():
    warnings.warn("softmax got NaN inputs; they stay NaN")
top = x.max(axis=axis, keepdims=True)
top = np.where(np.isfinite(top), top, np.zeros((), dtype=x.dtype))
ex = np.exp(x - top)
tot = ex.sum(axis=axis, keepdims=True)
res = ex / np.where(tot > 0, tot, np.ones((), dtype=x.dtype))
assert res.dtype == x.dtype
return res
""",
    ),
    (
        "fill",
        "scale_scores",
        """
assert d_k > 0, "d_k must be positive"
if d_k == 1:
    warnings.warn("d_k = 1: scaling changes nothing")
return scores / float(np.sqrt(d_k))
""",
    ),
    (
        "fill",
        "attention_scores",
        """
assert Q.shape[-1] == K.shape[-1], (Q.shape, K.shape)
return np.matmul(Q, K.transpose(*range(K.ndim - 2), -1, -2))
""",
    ),
    (
        "fill",
        "causal_mask",
        """
assert num_tokens >= 0
return np.greater.outer(np.arange(num_tokens), np.arange(num_tokens)).T
""",
    ),
    (
        "fill",
        "self_attention",
        """
assert X.shape[-1] == W_q.shape[0] == W_k.shape[0] == W_v.shape[0]
Q, K, V = X @ W_q, X @ W_k, X @ W_v
scores = scale_scores(attention_scores(Q, K), K.shape[-1])
if causal:
    scores = np.where(causal_mask(X.shape[-2]), -np.inf, scores)
weights = softmax(scores, axis=-1)
assert np.allclose(weights.sum(-1), 1.0)
return weights @ V, weights
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
token_ids = np.asarray(token_ids)
assert np.issubdtype(token_ids.dtype, np.integer)
if token_ids.size and token_ids.max() >= E.shape[0]:
    warnings.warn("a token id is outside the vocabulary")
hot = np.zeros(token_ids.shape + (E.shape[0],), dtype=E.dtype)
hot[..., :] = np.arange(E.shape[0]) == token_ids[..., None]
out = hot @ E
assert out.dtype == E.dtype
return out
""",
    ),
]
