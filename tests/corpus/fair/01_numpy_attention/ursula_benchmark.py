STORY = "benchmarks @ against einsum for 40 s in the attention_scores cell, then defines it below the loop; tensordot later"
PATTERNS = ["einsum", "tensordot", "block-globals"]
SAVE = {}
EDITS = [
    (
        "replace",
        "attention_scores",
        '''
import time


def bench(fn, seconds=4.0):
    """average seconds per call, measured for `seconds` of wall time"""
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn()
        calls += 1
    return (time.perf_counter() - start) / calls


bench_rng = np.random.default_rng(0)
timings = []
for T in (16, 64, 256, 512, 1024):
    Qb = bench_rng.normal(size=(T, 64)).astype(np.float32)
    Kb = bench_rng.normal(size=(T, 64)).astype(np.float32)
    t_matmul = bench(lambda: Qb @ Kb.T)
    t_einsum = bench(lambda: np.einsum("id,jd->ij", Qb, Kb))
    timings.append((T, t_matmul, t_einsum))
    print(f"T={T:5d}  matmul {t_matmul * 1e6:9.1f} us   einsum {t_einsum * 1e6:9.1f} us")


def attention_scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    # einsum keeps any batch axes in front and the dtype of Q and K
    return np.einsum("...qd,...kd->...qk", Q, K)
''',
    ),
    (
        "fill",
        "embed_one_hot",
        """
ids = np.asarray(token_ids)
one_hot = np.zeros(ids.shape + (E.shape[0],), dtype=E.dtype)
np.put_along_axis(one_hot, ids[..., None], 1, axis=-1)
return np.tensordot(one_hot, E, axes=([-1], [0]))
""",
    ),
    (
        "fill",
        "self_attention",
        """
Q = np.einsum("...td,dk->...tk", X, W_q)
K = np.einsum("...td,dk->...tk", X, W_k)
V = np.einsum("...td,dk->...tk", X, W_v)
S = scale_scores(attention_scores(Q, K), W_k.shape[-1])
if causal:
    S = np.where(causal_mask(S.shape[-1]), -np.inf, S)
A = softmax(S, axis=-1)
return np.einsum("...qk,...kd->...qd", A, V), A
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
