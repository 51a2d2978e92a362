# assignment: 02_self_attention
# expect: simple_attention_loop=softmax_wrong_dim
def simple_attention_loop(inputs):
    n = inputs.shape[0]
    scores = torch.empty(n, n, dtype=inputs.dtype)
    for i in range(n):
        for j in range(n):
            scores[i, j] = torch.dot(inputs[i], inputs[j])
    weights = torch.empty_like(scores)
    for j in range(n):
        weights[:, j] = softmax(scores[:, j], dim=0)
    context = torch.zeros_like(inputs)
    for i in range(n):
        for j in range(n):
            context[i] += weights[i, j] * inputs[j]
    return context, weights
