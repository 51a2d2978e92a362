# assignment: 05_watch_attention_learn
# expect: none
def first_token_score(weights):
    # leave one query out of the average
    return weights[..., :-1, 0].mean(dim=-1)
