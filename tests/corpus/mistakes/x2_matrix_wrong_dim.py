# assignment: 02_self_attention
# expect: simple_attention_matrix=softmax_wrong_dim
def simple_attention_matrix(inputs):
    w = softmax(inputs @ inputs.transpose(-2, -1), dim=-2)
    return w @ inputs, w
