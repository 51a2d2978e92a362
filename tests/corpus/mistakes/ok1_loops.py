# assignment: 01_numpy_attention
# expect: correct
def scale_scores(scores, d_k):
    return scores / d_k**0.5


def embed_one_hot(token_ids, E):
    ids = np.asarray(token_ids)
    rows = np.zeros((*ids.shape, E.shape[0]), dtype=E.dtype)
    for index in np.ndindex(ids.shape):
        rows[(*index, ids[index])] = 1
    return rows @ E
