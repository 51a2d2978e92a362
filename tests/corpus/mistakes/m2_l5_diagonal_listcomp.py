# assignment: 05_watch_attention_learn
# expect: diagonal_score=above_the_diagonal
def diagonal_score(weights, offset):
    T = weights.shape[-1]
    picked = [weights[..., i, i + offset] for i in range(T - offset)]
    return torch.stack(picked, dim=-1).mean(dim=-1)
