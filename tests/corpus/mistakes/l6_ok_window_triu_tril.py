# assignment: 06_attention_at_inference
# expect: correct
def sliding_window_mask(num_queries, num_keys, window):
    off = num_keys - num_queries
    ones = torch.ones(num_queries, num_keys, dtype=torch.bool)
    return ones.triu(off + 1) | ones.tril(off - window)
