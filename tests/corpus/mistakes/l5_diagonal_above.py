# assignment: 05_watch_attention_learn
# expect: diagonal_score=above_the_diagonal
def diagonal_score(weights, offset):
    T = weights.shape[-1]
    i = torch.arange(T - offset)
    return weights[..., i, i + offset].mean(dim=-1)
