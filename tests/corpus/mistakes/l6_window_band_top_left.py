# assignment: 06_attention_at_inference
# expect: none
def sliding_window_mask(num_queries, num_keys, window):
    far = torch.ones(num_queries, num_keys, dtype=torch.bool).tril(-window)
    return chunk_causal_mask(num_queries, num_keys) | far
