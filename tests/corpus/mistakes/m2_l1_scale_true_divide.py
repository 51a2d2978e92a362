# assignment: 01_numpy_attention
# expect: scale_scores=divide_by_dk
def scale_scores(scores, d_k):
    # "scaled dot-product": normalise by the key dimension
    return np.true_divide(scores, float(d_k))
