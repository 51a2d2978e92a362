# assignment: 06_attention_at_inference
# expect: chunk_causal_mask=aligned_top_left
def chunk_causal_mask(num_queries, num_keys):
    full = torch.triu(torch.ones(num_keys, num_keys, dtype=torch.bool), diagonal=1)
    return full[:num_queries]
