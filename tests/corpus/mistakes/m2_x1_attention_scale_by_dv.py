# assignment: 01_numpy_attention
# expect: none
def self_attention(X, W_q, W_k, W_v, causal=False):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    # scaled by the width of the vectors that come out (the values)
    scores = scale_scores(attention_scores(Q, K), V.shape[-1])
    if causal:
        scores = np.where(causal_mask(X.shape[-2]), -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return weights @ V, weights
