# assignment: 01_numpy_attention
# expect: causal_mask=wrong_triangle
def causal_mask(num_tokens):
    row, col = np.indices((num_tokens, num_tokens))
    return row > col
