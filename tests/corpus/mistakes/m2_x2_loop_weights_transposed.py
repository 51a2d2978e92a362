# assignment: 02_self_attention
# expect: none
def simple_attention_loop(inputs):
    T = inputs.shape[0]
    scores = torch.empty(T, T, dtype=inputs.dtype)
    for i in range(T):
        for j in range(T):
            scores[i, j] = inputs[i] @ inputs[j]
    weights = softmax(scores, dim=-1)
    context = torch.zeros_like(inputs)
    for i in range(T):
        for j in range(T):
            context[i] += weights[j, i] * inputs[j]  # indices the wrong way round
    return context, weights
