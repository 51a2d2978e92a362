# assignment: 01_numpy_attention
# expect: none
def scale_scores(scores, d_k):
    # d_k is an int, so its square root should be one too
    return scores / int(np.sqrt(d_k))
