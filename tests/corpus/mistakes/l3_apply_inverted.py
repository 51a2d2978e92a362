# assignment: 03_causal_attention
# expect: apply_causal_mask=inverted_mask
def apply_causal_mask(scores):
    n = scores.shape[-1]
    keep = torch.tril(torch.ones(n, n, dtype=torch.bool))
    return scores.masked_fill(keep, float("-inf"))
