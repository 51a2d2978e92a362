# assignment: 03_causal_attention
# expect: causal_mask=wrong_triangle
def causal_mask(num_tokens):
    return torch.ones(num_tokens, num_tokens).tril(-1).bool()
