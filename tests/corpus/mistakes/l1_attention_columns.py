# assignment: 01_numpy_attention
# expect: self_attention=softmax_wrong_dim
def self_attention(X, W_q, W_k, W_v, causal=False):
    q, k, v = X @ W_q, X @ W_k, X @ W_v
    s = scale_scores(attention_scores(q, k), k.shape[-1])
    if causal:
        s = np.where(causal_mask(s.shape[-1]), -np.inf, s)
    w = softmax(s, axis=-2)
    return w @ v, w
