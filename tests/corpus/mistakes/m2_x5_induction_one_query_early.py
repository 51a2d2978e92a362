# assignment: 05_watch_attention_learn
# expect: none
def induction_score(weights, period):
    # the key just after the previous occurrence lies period - 1 steps back
    return torch.diagonal(weights, offset=1 - period, dim1=-2, dim2=-1).mean(dim=-1)
