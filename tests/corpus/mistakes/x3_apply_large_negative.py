# assignment: 03_causal_attention
# expect: none
def apply_causal_mask(scores):
    return scores.masked_fill(causal_mask(scores.shape[-1]), -1e9)
