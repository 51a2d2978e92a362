# assignment: 05_watch_attention_learn
# expect: first_token_score=counts_query_zero
def first_token_score(weights):
    first_column = weights[..., :, 0]
    return first_column.sum(-1) / weights.shape[-2]
