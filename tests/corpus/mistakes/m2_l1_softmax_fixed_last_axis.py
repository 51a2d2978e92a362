# assignment: 01_numpy_attention
# expect: softmax=ignores_axis
def softmax(x, axis=-1):
    x = np.asarray(x)
    biggest = x.max(axis=-1, keepdims=True)
    ex = np.exp(x - biggest)
    out = ex / ex.sum(axis=-1, keepdims=True)
    return np.nan_to_num(out)  # a row of -inf gives 0/0
