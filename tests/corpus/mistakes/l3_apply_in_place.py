# assignment: 03_causal_attention
# expect: apply_causal_mask=in_place
def apply_causal_mask(scores):
    n = scores.shape[-1]
    scores[..., causal_mask(n)] = float("-inf")
    return scores
