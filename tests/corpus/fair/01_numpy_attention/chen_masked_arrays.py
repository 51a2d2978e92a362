STORY = "numpy.ma for every masked softmax; a Colab copy of the notebook"
PATTERNS = ["numpy-ma", "colab-save", "renamed-file"]
SAVE = {"file": "Copy of 01_numpy_attention.ipynb", "editor": "colab"}
EDITS = [
    (
        "fill",
        "softmax",
        """
x = np.asarray(x)
# -inf entries are masked out; a row with nothing left becomes zeros below
masked = np.ma.masked_invalid(x)
peak = masked.max(axis=axis, keepdims=True)
e = np.ma.exp(masked - peak)
out = e / e.sum(axis=axis, keepdims=True)
return np.ma.filled(out, 0).astype(x.dtype)
""",
    ),
    (
        "fill",
        "scale_scores",
        """
return np.divide(scores, d_k**0.5)
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
return np.triu(np.full((num_tokens, num_tokens), True), 1)
""",
    ),
    (
        "fill",
        "self_attention",
        """
Q, K, V = X @ W_q, X @ W_k, X @ W_v
scores = scale_scores(attention_scores(Q, K), K.shape[-1])
if causal:
    mask = np.broadcast_to(causal_mask(X.shape[-2]), scores.shape)
    scores = np.ma.masked_array(scores, mask=mask).filled(-np.inf)
weights = softmax(scores)
return weights @ V, weights
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
vocab = E.shape[0]
one_hot = np.eye(vocab, dtype=E.dtype)[np.asarray(token_ids)]
return one_hot @ E
""",
    ),
]
