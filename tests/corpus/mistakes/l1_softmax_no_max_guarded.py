# assignment: 01_numpy_attention
# expect: softmax=no_max_subtraction
def softmax(x, axis=-1):
    # guard rows that are entirely -inf, but forget to shift by the maximum
    e = np.exp(x)
    total = e.sum(axis=axis, keepdims=True)
    total[total == 0] = 1.0
    return e / total
