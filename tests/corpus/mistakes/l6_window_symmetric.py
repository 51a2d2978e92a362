# assignment: 06_attention_at_inference
# expect: none
def sliding_window_mask(num_queries, num_keys, window):
    p = torch.arange(num_keys - num_queries, num_keys).view(-1, 1)
    j = torch.arange(num_keys).view(1, -1)
    return (p - j).abs() >= window
