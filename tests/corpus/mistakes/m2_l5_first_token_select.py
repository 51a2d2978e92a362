# assignment: 05_watch_attention_learn
# expect: first_token_score=counts_query_zero
def first_token_score(weights):
    on_first = weights.select(-1, 0)  # [..., T]: every query's weight on token 0
    return on_first.mean(dim=-1)
