STORY = "keeps torch's softmax and scaled_dot_product_attention as references in variables beside his NumPy code, computed before his defs, compared after them"
PATTERNS = []
SAVE = {}
EDITS = [
    (
        "replace",
        "softmax",
        '''
import torch

x_check = (np.random.default_rng(3).normal(size=(4, 6)) * 30).astype(np.float32)
ref = torch.softmax(torch.from_numpy(x_check), dim=-1).numpy()


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """softmax = exp(x - logsumexp(x))"""
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    finite = np.isfinite(lse)
    return np.where(finite, np.exp(x - np.where(finite, lse, 0)), 0).astype(x.dtype)


ours = softmax(x_check)
print("largest difference to torch.softmax:", np.abs(ours - ref).max())
''',
    ),
    (
        "replace",
        "self_attention",
        """
def self_attention(X, W_q, W_k, W_v, causal=False):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = scale_scores(attention_scores(Q, K), Q.shape[-1])
    if causal:
        T = scores.shape[-1]
        scores = scores + np.triu(np.full((T, T), -np.inf, dtype=scores.dtype), k=1)
    weights = softmax(scores)
    return weights @ V, weights


rng_check = np.random.default_rng(5)
Xc = rng_check.normal(size=(2, 5, 4)).astype(np.float32)
Wc = [rng_check.normal(size=(4, 3)).astype(np.float32) for _ in range(3)]
ctx, _ = self_attention(Xc, *Wc, causal=True)
qt, kt, vt = (torch.from_numpy(Xc @ W) for W in Wc)
expected = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True).numpy()
print("same as torch:", np.allclose(ctx, expected, atol=1e-5))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
