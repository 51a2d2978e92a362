STORY = (
    "keeps the stubs, writes each answer in a new cell right under it, shows results with display()"
)
PATTERNS = ["answer-in-new-cell-below", "display"]
SAVE = {}
EDITS = [
    (
        "below",
        "softmax",
        """
def softmax(x, axis=-1):
    x = np.asarray(x)
    biggest = np.amax(x, axis=axis, keepdims=True)
    biggest = np.nan_to_num(biggest, neginf=0.0, posinf=0.0)
    powers = np.exp(x - biggest)
    sums = powers.sum(axis=axis, keepdims=True)
    sums[sums == 0] = 1.0
    return powers / sums

display(softmax(np.array([[1.0, 2.0, 3.0], [-np.inf, -np.inf, -np.inf]])))
""",
    ),
    (
        "below",
        "scale_scores",
        """
def scale_scores(scores, d_k):
    return np.true_divide(scores, np.sqrt(d_k).astype(scores.dtype))
""",
    ),
    (
        "below",
        "attention_scores",
        """
def attention_scores(Q, K):
    return Q @ np.moveaxis(K, -1, -2)

display(attention_scores(np.eye(2), np.ones((3, 2))))
""",
    ),
    (
        "below",
        "causal_mask",
        """
def causal_mask(num_tokens):
    upper = np.tri(num_tokens, num_tokens, k=0, dtype=bool)
    return ~upper
""",
    ),
    (
        "below",
        "self_attention",
        """
def self_attention(X, W_q, W_k, W_v, causal=False):
    queries, keys, values = X @ W_q, X @ W_k, X @ W_v
    scores = scale_scores(attention_scores(queries, keys), keys.shape[-1])
    if causal:
        scores = scores.copy()
        scores[..., causal_mask(scores.shape[-1])] = -np.inf
    weights = softmax(scores, axis=-1)
    return weights @ values, weights
""",
    ),
    (
        "below",
        "embed_one_hot",
        """
def embed_one_hot(token_ids, E):
    token_ids = np.asarray(token_ids)
    hot = np.zeros((*token_ids.shape, E.shape[0]), dtype=E.dtype)
    np.put_along_axis(hot, token_ids[..., None], 1, axis=-1)
    return hot @ E

display(embed_one_hot(np.array([0, 2]), np.arange(6.0).reshape(3, 2)))
""",
    ),
]
