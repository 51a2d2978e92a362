# assignment: 05_watch_attention_learn
# expect: permutation_gap=mean_not_max
def permutation_gap(layer, x, perm):
    shuffled_first = layer(x[:, perm])
    layer_first = layer(x)[:, perm]
    return (shuffled_first - layer_first).abs().mean().item()
