# assignment: 04_multihead_attention
# expect: none
def gpt2_attention_parameters():
    return 4 * (768 * 768 + 768)
