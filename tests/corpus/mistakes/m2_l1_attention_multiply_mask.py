# assignment: 01_numpy_attention
# expect: self_attention=mask_after_softmax
def self_attention(X, W_q, W_k, W_v, causal=False):
    queries = np.matmul(X, W_q)
    keys = np.matmul(X, W_k)
    values = np.matmul(X, W_v)
    raw = np.einsum("...qd,...kd->...qk", queries, keys)
    weights = softmax(raw / keys.shape[-1] ** 0.5, axis=-1)
    if causal:
        future = causal_mask(X.shape[-2])
        weights = weights * ~future  # hide the future
    return weights @ values, weights
