# assignment: 01_numpy_attention
# expect: softmax=global_max
def softmax(x, axis=-1):
    e = np.exp(x - x.max())
    return e / e.sum(axis=axis, keepdims=True)
