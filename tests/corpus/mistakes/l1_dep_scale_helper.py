# assignment: 01_numpy_attention
# expect: scale_scores=no_scaling
def scale_scores(scores, d_k):
    return np.array(scores)
