# assignment: 01_numpy_attention
# expect: attention_scores=keys_dot_T_batched
def attention_scores(Q, K):
    return np.matmul(Q, np.transpose(K))
