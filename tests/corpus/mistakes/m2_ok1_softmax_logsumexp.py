# assignment: 01_numpy_attention
# expect: correct
def softmax(x, axis=-1):
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isneginf(top), 0, top).astype(x.dtype)
    with np.errstate(divide="ignore"):
        log_total = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True))
    log_total = np.where(np.isneginf(log_total), 0, log_total).astype(x.dtype)
    return np.exp(x - top - log_total)


def causal_mask(num_tokens):
    return np.tri(num_tokens, num_tokens, k=0, dtype=bool) == False  # noqa: E712


def attention_scores(Q, K):
    return np.matmul(Q, np.moveaxis(K, -1, -2))
