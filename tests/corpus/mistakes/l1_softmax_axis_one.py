# assignment: 01_numpy_attention
# expect: softmax=ignores_axis
def softmax(x, axis=-1):
    top = np.max(x, axis=1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(x - top)
    s = np.sum(e, axis=1, keepdims=True)
    return e / np.where(s == 0, 1.0, s)
