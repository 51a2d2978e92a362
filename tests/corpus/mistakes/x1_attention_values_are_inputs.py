# assignment: 01_numpy_attention
# expect: none
def self_attention(X, W_q, W_k, W_v, causal=False):
    Q, K = X @ W_q, X @ W_k
    scores = scale_scores(attention_scores(Q, K), K.shape[-1])
    if causal:
        scores = np.where(causal_mask(X.shape[-2]), -np.inf, scores)
    weights = softmax(scores, axis=-1)
    return weights @ (X @ W_k), weights
