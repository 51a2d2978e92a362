# assignment: 01_numpy_attention
# expect: self_attention=mask_after_softmax
def self_attention(X, W_q, W_k, W_v, causal=False):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    w = softmax(scale_scores(attention_scores(Q, K), K.shape[-1]), axis=-1)
    if causal:
        w = w * ~causal_mask(X.shape[-2])
    return w @ V, w
