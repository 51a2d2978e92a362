# assignment: 05_watch_attention_learn
# expect: none
def permutation_gap(layer, x, perm):
    shuffled = layer(x[:, perm])
    plain = layer(x)
    return float((shuffled - plain).abs().max())
