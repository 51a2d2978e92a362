# assignment: 01_numpy_attention
# expect: self_attention=mask_with_zero
def self_attention(X, W_q, W_k, W_v, causal=False):
    Q = X @ W_q
    K = X @ W_k
    V = X @ W_v
    s = scale_scores(attention_scores(Q, K), W_k.shape[1])
    if causal:
        s = s.copy()
        s[..., causal_mask(X.shape[-2])] = 0
    w = softmax(s)
    return w @ V, w
