# assignment: 05_watch_attention_learn
# expect: padding_causal_mask=right_padding
def padding_causal_mask(lengths, num_tokens):
    B = lengths.shape[0]
    mask = torch.zeros(B, 1, num_tokens, num_tokens, dtype=torch.bool)
    for b in range(B):
        n_real = int(lengths[b])
        for i in range(num_tokens):
            for j in range(num_tokens):
                if j > i or j >= n_real:
                    mask[b, 0, i, j] = True
    return mask
