# assignment: 01_numpy_attention
# expect: causal_mask=blocks_diagonal
def causal_mask(num_tokens):
    idx = np.arange(num_tokens)
    return idx[None, :] >= idx[:, None]
