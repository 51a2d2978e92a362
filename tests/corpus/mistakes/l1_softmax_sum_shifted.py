# assignment: 01_numpy_attention
# expect: softmax=sum_of_raw_scores
def softmax(x, axis=-1):
    z = x - np.amax(x, axis=axis, keepdims=True)
    denominator = np.add.reduce(z, axis=axis, keepdims=True)
    return np.exp(z) / denominator
