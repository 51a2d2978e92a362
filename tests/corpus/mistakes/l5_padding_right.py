# assignment: 05_watch_attention_learn
# expect: padding_causal_mask=right_padding
def padding_causal_mask(lengths, num_tokens):
    pos = torch.arange(num_tokens)
    future = pos[None, :] > pos[:, None]
    padded = pos[None, :] >= lengths[:, None]  # [batch, key]
    return (future[None] | padded[:, None, :]).unsqueeze(1)
