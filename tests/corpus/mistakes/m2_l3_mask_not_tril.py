# assignment: 03_causal_attention
# expect: causal_mask=blocks_diagonal
def causal_mask(num_tokens):
    past = torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril(-1)
    return ~past
