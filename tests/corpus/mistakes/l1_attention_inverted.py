# assignment: 01_numpy_attention
# expect: self_attention=inverted_mask
def self_attention(X, W_q, W_k, W_v, causal=False):
    q, k, v = X @ W_q, X @ W_k, X @ W_v
    s = scale_scores(attention_scores(q, k), k.shape[-1])
    if causal:
        visible = np.tril(np.ones((s.shape[-1], s.shape[-1]), dtype=bool))
        s = np.where(visible, -np.inf, s)
    w = softmax(s, axis=-1)
    return w @ v, w
