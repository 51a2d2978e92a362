# assignment: 01_numpy_attention
# expect: causal_mask=wrong_triangle
def causal_mask(num_tokens):
    return np.array([[col < row for col in range(num_tokens)] for row in range(num_tokens)])
