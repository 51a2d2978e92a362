STORY = "exported to .py; globals made in if/for/try blocks; a helper called softmax_rows"
PATTERNS = ["py-export", "renamed-file", "block-globals", "lookalike-names", "shared-helper"]
SAVE = {"file": "hana_01_numpy_attention.py", "editor": "py"}
EDITS = [
    (
        "below",
        "setup",
        """
# swap the last two axes: numpy 2 has a function for it
if hasattr(np, "matrix_transpose"):
    swap_last = np.matrix_transpose
else:
    swap_last = lambda a: np.swapaxes(a, -1, -2)

# masks for short sequences, built once
MASKS = {}
for n in range(1, 17):
    MASKS[n] = np.triu(np.ones((n, n), dtype=bool), 1)

try:
    NEG = -np.inf
except AttributeError:
    NEG = -1e300
""",
    ),
    (
        "above",
        "softmax",
        '''
def softmax_rows(a):
    """softmax over the last axis, rows of all -inf give zeros"""
    hi = a.max(axis=-1, keepdims=True)
    hi[hi == NEG] = 0
    ex = np.exp(a - hi)
    return ex / np.maximum(ex.sum(axis=-1, keepdims=True), np.finfo(a.dtype).tiny)
''',
    ),
    (
        "fill",
        "softmax",
        """
x = np.asarray(x)
return np.moveaxis(softmax_rows(np.moveaxis(x, axis, -1)), -1, axis)
""",
    ),
    (
        "fill",
        "scale_scores",
        """
return scores * d_k ** -0.5
""",
    ),
    (
        "fill",
        "attention_scores",
        """
return Q @ swap_last(K)
""",
    ),
    (
        "fill",
        "causal_mask",
        """
if num_tokens in MASKS:
    return MASKS[num_tokens].copy()
return np.triu(np.ones((num_tokens, num_tokens), dtype=bool), 1)
""",
    ),
    (
        "fill",
        "self_attention",
        """
Q, K, V = X @ W_q, X @ W_k, X @ W_v
s = scale_scores(attention_scores(Q, K), Q.shape[-1])
if causal:
    s = np.where(causal_mask(s.shape[-1]), NEG, s)
w = softmax_rows(s)
return w @ V, w
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
ids = np.asarray(token_ids)
return np.eye(E.shape[0], dtype=E.dtype)[ids.reshape(-1)].reshape(*ids.shape, -1) @ E
""",
    ),
]
