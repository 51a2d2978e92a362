# assignment: 02_self_attention
# expect: simple_attention_loop=loop_off_by_one
def simple_attention_loop(inputs):
    n = len(inputs)
    scores = torch.zeros(n, n, dtype=inputs.dtype)
    i = 0
    while i < n:
        j = 0
        while j < n:
            scores[i, j] = (inputs[i] * inputs[j]).sum()
            j += 1
        i += 1
    attn = softmax(scores, dim=-1)
    out = torch.zeros_like(inputs)
    i = 0
    while i < n:
        j = 1
        while j < n:
            out[i] += attn[i, j] * inputs[j]
            j += 1
        i += 1
    return out, attn
