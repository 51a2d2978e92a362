STORY = "einsum for every product, keepdims throughout, one helper shared by softmax and embed"
PATTERNS = ["einsum", "shared-helper", "question-comment", "float32-contract"]
SAVE = {}
EDITS = [
    (
        "above",
        "softmax",
        '''
def _project(A, W):
    """A [..., n, d] times W [d, k] -> [..., n, k], for projections and for the embedding."""
    return np.einsum("...nd,dk->...nk", A, W)
''',
    ),
    (
        "fill",
        "softmax",
        """
moved = np.moveaxis(np.asarray(x), axis, -1)
peak = moved.max(axis=-1, keepdims=True)
peak[~np.isfinite(peak)] = 0  # an all -inf row: shift by nothing, exp gives zeros
e = np.exp(moved - peak)
total = e.sum(axis=-1, keepdims=True)
total[total == 0] = 1
return np.moveaxis(e / total, -1, axis).astype(x.dtype, copy=False)
""",
    ),
    (
        "fill",
        "scale_scores",
        """
return np.einsum("...,->...", scores, np.asarray(1.0 / np.sqrt(d_k), dtype=scores.dtype))
""",
    ),
    (
        "fill",
        "attention_scores",
        """
# q and k share the d axis: is this [..., T_q, T_k]?
return np.einsum("...qd,...kd->...qk", Q, K)
""",
    ),
    (
        "fill",
        "causal_mask",
        """
rows = np.arange(num_tokens)
return np.einsum("i,j->ij", rows, np.ones(num_tokens, dtype=int)) < rows[None, :]
""",
    ),
    (
        "fill",
        "self_attention",
        """
Q, K, V = _project(X, W_q), _project(X, W_k), _project(X, W_v)
scores = scale_scores(attention_scores(Q, K), W_k.shape[1])
if causal:
    scores = np.where(causal_mask(scores.shape[-1]), -np.inf, scores)
weights = softmax(scores, axis=-1)
return np.einsum("...qk,...kv->...qv", weights, V), weights
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
ids = np.asarray(token_ids)[..., None]  # [..., 1]
one_hot = (ids == np.arange(E.shape[0])).astype(E.dtype)  # [..., vocab]
return _project(one_hot, E)
""",
    ),
]
