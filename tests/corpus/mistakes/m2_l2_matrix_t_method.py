# assignment: 02_self_attention
# expect: simple_attention_matrix=inputs_dot_T_batched
def simple_attention_matrix(inputs):
    attn_scores = inputs.matmul(inputs.t())
    attn_weights = softmax(attn_scores, dim=-1)
    return attn_weights.matmul(inputs), attn_weights
