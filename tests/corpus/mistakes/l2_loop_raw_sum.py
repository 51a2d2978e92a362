# assignment: 02_self_attention
# expect: simple_attention_loop=sum_of_raw_scores
def simple_attention_loop(inputs):
    n = inputs.shape[0]
    scores = torch.zeros(n, n)
    for i in range(n):
        for j in range(n):
            scores[i, j] = (inputs[i] * inputs[j]).sum()
    weights = torch.zeros(n, n)
    for i in range(n):
        weights[i] = scores[i] / scores[i].sum()
    context = weights @ inputs
    return context, weights
