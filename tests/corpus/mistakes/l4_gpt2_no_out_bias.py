# assignment: 04_multihead_attention
# expect: gpt2_attention_parameters=out_proj_bias_forgotten
def gpt2_attention_parameters():
    d = 768
    return sum(d * d for _ in range(4))
