# assignment: 01_numpy_attention
# expect: softmax=no_max_subtraction
def softmax(x, axis=-1):
    numerators = np.exp(x)
    return numerators / np.sum(numerators, axis=axis, keepdims=True)
