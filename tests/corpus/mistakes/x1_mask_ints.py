# assignment: 01_numpy_attention
# expect: none
def causal_mask(num_tokens):
    return np.triu(np.ones((num_tokens, num_tokens), dtype=int), k=1)
