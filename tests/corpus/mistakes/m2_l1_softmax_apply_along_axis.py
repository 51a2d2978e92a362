# assignment: 01_numpy_attention
# expect: softmax=no_max_subtraction
def softmax(x, axis=-1):
    def one_slice(v):
        ex = np.exp(v)
        return ex / ex.sum()

    return np.apply_along_axis(one_slice, axis, np.asarray(x))
