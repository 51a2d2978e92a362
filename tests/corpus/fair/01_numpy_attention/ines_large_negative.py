STORY = "large negative numbers instead of -inf, with a guard for rows that are all masked"
PATTERNS = ["large-negative", "float32-contract"]
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
x = np.asarray(x)
dead = np.all(np.isneginf(x), axis=axis, keepdims=True)  # rows with nothing to see
big_negative = np.finfo(x.dtype).min
safe = np.where(np.isneginf(x), big_negative, x)
safe = safe - safe.max(axis=axis, keepdims=True)
p = np.exp(safe)
p = p / p.sum(axis=axis, keepdims=True)
p[np.broadcast_to(dead, p.shape)] = 0.0
return p.astype(x.dtype, copy=False)
""",
    ),
    (
        "fill",
        "scale_scores",
        """
return scores / np.sqrt(d_k, dtype=scores.dtype)
""",
    ),
    (
        "fill",
        "attention_scores",
        """
return np.matmul(Q, K.swapaxes(-2, -1))
""",
    ),
    (
        "fill",
        "causal_mask",
        """
return np.tril(np.ones((num_tokens, num_tokens), dtype=bool)) == False
""",
    ),
    (
        "fill",
        "self_attention",
        """
Q, K, V = X @ W_q, X @ W_k, X @ W_v
scores = scale_scores(attention_scores(Q, K), K.shape[-1])
if causal:
    scores = np.where(causal_mask(scores.shape[-1]), -1e9, scores)
w = softmax(scores, axis=-1)
return w @ V, w
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
flat = np.asarray(token_ids).ravel()
hot = np.zeros((flat.size, E.shape[0]), dtype=E.dtype)
hot[np.arange(flat.size), flat] = 1
return (hot @ E).reshape(*np.shape(token_ids), E.shape[1])
""",
    ),
]
