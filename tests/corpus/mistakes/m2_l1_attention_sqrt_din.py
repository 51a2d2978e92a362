# assignment: 01_numpy_attention
# expect: self_attention=scale_by_d_in
def self_attention(X, W_q, W_k, W_v, causal=False):
    d_model = X.shape[-1]
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    raw = np.einsum("...id,...jd->...ij", Q, K)
    scores = raw / d_model**0.5
    if causal:
        T = X.shape[-2]
        scores = np.where(np.triu(np.ones((T, T), dtype=bool), 1), -np.inf, scores)
    weights = softmax(scores)
    return weights @ V, weights
