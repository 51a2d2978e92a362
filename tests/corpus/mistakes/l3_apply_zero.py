# assignment: 03_causal_attention
# expect: apply_causal_mask=mask_with_zero
def apply_causal_mask(scores):
    hidden = causal_mask(scores.shape[-1])
    return torch.where(hidden, torch.zeros_like(scores), scores)
