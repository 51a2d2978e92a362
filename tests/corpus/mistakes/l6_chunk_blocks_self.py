# assignment: 06_attention_at_inference
# expect: chunk_causal_mask=diagonal_blocked
def chunk_causal_mask(num_queries, num_keys):
    offset = num_keys - num_queries
    mask = torch.zeros(num_queries, num_keys, dtype=torch.bool)
    for i in range(num_queries):
        for j in range(num_keys):
            if j >= i + offset:
                mask[i, j] = True
    return mask
