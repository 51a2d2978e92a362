# assignment: 02_self_attention
# expect: simple_attention_matrix=inputs_dot_T_batched
def simple_attention_matrix(inputs):
    w = softmax(torch.matmul(inputs, inputs.T), dim=-1)
    return torch.matmul(w, inputs), w
