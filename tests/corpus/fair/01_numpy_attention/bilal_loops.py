STORY = "explicit Python loops where the lesson allows them, prints while debugging"
PATTERNS = ["explicit-loops", "print-in-function", "float32-contract"]
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
x = np.asarray(x)
out = np.zeros_like(x)
moved_in = np.moveaxis(x, axis, -1)
moved_out = np.moveaxis(out, axis, -1)  # a view: writing into it fills `out`
for index in np.ndindex(moved_in.shape[:-1]):
    row = moved_in[index]
    if np.all(row == -np.inf):
        continue  # nothing to attend to: the row stays zero
    shifted = np.exp(row - row.max())
    moved_out[index] = shifted / shifted.sum()
return out
""",
    ),
    (
        "fill",
        "scale_scores",
        """
scale = d_k ** 0.5  # a Python float: float32 scores stay float32
return np.array(scores) / scale
""",
    ),
    (
        "fill",
        "attention_scores",
        """
out = np.zeros(Q.shape[:-1] + (K.shape[-2],), dtype=np.result_type(Q, K))
for i in range(Q.shape[-2]):
    for j in range(K.shape[-2]):
        out[..., i, j] = (Q[..., i, :] * K[..., j, :]).sum(axis=-1)
return out
""",
    ),
    (
        "fill",
        "causal_mask",
        """
mask = np.zeros((num_tokens, num_tokens), dtype=bool)
for i in range(num_tokens):
    for j in range(i + 1, num_tokens):
        mask[i, j] = True
return mask
""",
    ),
    (
        "fill",
        "self_attention",
        """
Q, K, V = X @ W_q, X @ W_k, X @ W_v
d_k = W_k.shape[-1]
scores = scale_scores(attention_scores(Q, K), d_k)
if causal:
    T = X.shape[-2]
    for i in range(T):
        scores[..., i, i + 1 :] = -np.inf
weights = softmax(scores, axis=-1)
print("self_attention: weights", weights.shape, "causal" if causal else "full")
return weights @ V, weights
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
ids = np.asarray(token_ids)
rows = np.zeros(ids.shape + (E.shape[0],), dtype=E.dtype)
for position in np.ndindex(ids.shape):
    rows[position + (ids[position],)] = 1
return rows @ E
""",
    ),
]
