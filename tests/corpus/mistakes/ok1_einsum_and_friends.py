# assignment: 01_numpy_attention
# expect: correct
def softmax(x, axis=-1):
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    peak = np.max(x, axis=axis, keepdims=True)
    peak[~np.isfinite(peak)] = 0
    e = np.exp(x - peak)
    total = e.sum(axis=axis, keepdims=True)
    total[total == 0] = 1
    return e / total


def attention_scores(Q, K):
    return np.einsum("...qd,...kd->...qk", Q, K)


def causal_mask(num_tokens):
    r = np.arange(num_tokens)
    return r[None, :] > r[:, None]


def self_attention(X, W_q, W_k, W_v, causal=False):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    s = scale_scores(attention_scores(Q, K), K.shape[-1])
    if causal:
        s = np.where(causal_mask(X.shape[-2]), -1e30, s)
    w = softmax(s, axis=-1)
    return w @ V, w
