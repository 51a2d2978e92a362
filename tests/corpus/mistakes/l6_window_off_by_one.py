# assignment: 06_attention_at_inference
# expect: sliding_window_mask=window_plus_one
def sliding_window_mask(num_queries, num_keys, window):
    p = torch.arange(num_queries).unsqueeze(1) + num_keys - num_queries
    j = torch.arange(num_keys).unsqueeze(0)
    return (j > p) | (j < p - window)
