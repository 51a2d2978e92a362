# assignment: 03_causal_attention
# expect: none
def causal_mask(num_tokens):
    return torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1)
