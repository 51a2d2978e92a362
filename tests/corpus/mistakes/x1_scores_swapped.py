# assignment: 01_numpy_attention
# expect: attention_scores=queries_keys_swapped
def attention_scores(Q, K):
    return K @ np.swapaxes(Q, -1, -2)
