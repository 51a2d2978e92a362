# assignment: 01_numpy_attention
# expect: attention_scores=keys_not_transposed
def attention_scores(Q, K):
    return np.matmul(Q, K)
