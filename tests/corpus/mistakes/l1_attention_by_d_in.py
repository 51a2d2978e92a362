# assignment: 01_numpy_attention
# expect: self_attention=scale_by_d_in
def self_attention(X, W_q, W_k, W_v, causal=False):
    d_in = X.shape[-1]
    q, k, v = X @ W_q, X @ W_k, X @ W_v
    s = q @ np.swapaxes(k, -1, -2) * (1.0 / np.sqrt(d_in))
    if causal:
        s = np.where(causal_mask(s.shape[-1]), -np.inf, s)
    w = softmax(s, axis=-1)
    return w @ v, w
