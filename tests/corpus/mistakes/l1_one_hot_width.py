# assignment: 01_numpy_attention
# expect: embed_one_hot=one_hot_over_features
def embed_one_hot(token_ids, E):
    width = E.shape[1]
    rows = (np.asarray(token_ids)[..., None] == np.arange(width)).astype(np.float64)
    return rows @ E.T
