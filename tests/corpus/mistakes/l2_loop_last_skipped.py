# assignment: 02_self_attention
# expect: simple_attention_loop=loop_off_by_one
def simple_attention_loop(inputs):
    n = len(inputs)
    scores = torch.zeros(n, n, dtype=inputs.dtype)
    for a in range(n):
        for b in range(n):
            scores[a, b] = (inputs[a] * inputs[b]).sum()
    weights = softmax(scores, dim=1)
    context = torch.zeros_like(inputs)
    for a in range(n):
        for b in range(n - 1):
            context[a] = context[a] + weights[a, b] * inputs[b]
    return context, weights
