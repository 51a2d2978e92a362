# assignment: 01_numpy_attention
# expect: none
def attention_scores(Q, K):
    return K @ np.swapaxes(Q, -1, -2)
