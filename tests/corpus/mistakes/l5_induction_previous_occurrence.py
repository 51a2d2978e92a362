# assignment: 05_watch_attention_learn
# expect: induction_score=previous_occurrence
def induction_score(weights, period):
    T = weights.shape[-1]
    queries = torch.arange(period, T)
    return weights[..., queries, queries - period].mean(-1)
