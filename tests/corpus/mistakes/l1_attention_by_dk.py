# assignment: 01_numpy_attention
# expect: self_attention=divide_by_dk
def self_attention(X, W_q, W_k, W_v, causal=False):
    q, k, v = np.matmul(X, W_q), np.matmul(X, W_k), np.matmul(X, W_v)
    s = np.matmul(q, np.swapaxes(k, -2, -1)) / k.shape[-1]
    if causal:
        s[..., causal_mask(s.shape[-1])] = -np.inf
    w = softmax(s, axis=-1)
    return np.matmul(w, v), w
