# assignment: 03_causal_attention
# expect: causal_mask=blocks_diagonal
def causal_mask(num_tokens):
    rows = torch.arange(num_tokens).unsqueeze(1)
    cols = torch.arange(num_tokens).unsqueeze(0)
    return cols >= rows
