# assignment: 04_multihead_attention
# expect: gpt2_attention_parameters=out_proj_bias_forgotten
def gpt2_attention_parameters():
    d_model = 768
    matrices = ["W_query", "W_key", "W_value", "out_proj"]
    return sum(d_model * d_model for _ in matrices)
