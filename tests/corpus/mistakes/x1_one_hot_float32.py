# assignment: 01_numpy_attention
# expect: none
def embed_one_hot(token_ids, E):
    rows = np.eye(E.shape[0], dtype=np.float32)[token_ids]
    return rows @ E.astype(np.float32)
