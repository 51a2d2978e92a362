# assignment: 01_numpy_attention
# expect: none
def embed_one_hot(token_ids, E):
    # one vector for the whole sequence: the one-hot rows were summed
    rows = np.eye(E.shape[0])[token_ids]
    return rows.sum(axis=-2, keepdims=True) @ E
