# assignment: 01_numpy_attention
# expect: none
def scale_scores(scores, d_k):
    return scores * np.sqrt(d_k)
