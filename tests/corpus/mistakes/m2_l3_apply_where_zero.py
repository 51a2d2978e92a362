# assignment: 03_causal_attention
# expect: apply_causal_mask=mask_with_zero
def apply_causal_mask(scores):
    hide = causal_mask(scores.size(-1))
    return torch.where(hide, torch.zeros_like(scores), scores)
