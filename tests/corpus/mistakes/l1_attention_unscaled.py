# assignment: 01_numpy_attention
# expect: self_attention=no_scaling
def self_attention(X, W_q, W_k, W_v, causal=False):
    queries, keys, values = np.dot(X, W_q), np.dot(X, W_k), np.dot(X, W_v)
    raw = queries @ np.swapaxes(keys, -1, -2)
    if causal:
        raw = np.where(causal_mask(raw.shape[-1]), -np.inf, raw)
    weights = softmax(raw, axis=-1)
    return weights @ values, weights
