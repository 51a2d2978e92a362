STORY = "starts her softmax cell with !pip install and %matplotlib inline, then her helpers and softmax; plots the curve"
PATTERNS = ["magics"]
SAVE = {}
EDITS = [
    (
        "replace",
        "softmax",
        '''
!pip install -q numpy matplotlib
%matplotlib inline
import matplotlib.pyplot as plt


def row_max(x, axis):
    """max along axis, but 0 where the whole slice is -inf (nothing to subtract)"""
    m = np.max(x, axis=axis, keepdims=True)
    return np.where(np.isneginf(m), 0, m).astype(x.dtype)


def safe_divide(num, den):
    """num / den, and 0 where den is 0"""
    ok = den > 0
    return np.where(ok, num / np.where(ok, den, 1), 0).astype(num.dtype)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x)
    e = np.exp(x - row_max(x, axis))
    return safe_divide(e, e.sum(axis=axis, keepdims=True))
''',
    ),
    (
        "below",
        "test_softmax_stability",
        """
t = np.linspace(-5, 5, 101)
plt.plot(t, softmax(np.stack([t, np.zeros_like(t)]), axis=0)[0])
plt.title("softmax([t, 0])[0] is the sigmoid of t")
plt.show()
""",
    ),
    (
        "fill",
        "self_attention",
        """
d_k = W_k.shape[1]
Q, K, V = X @ W_q, X @ W_k, X @ W_v
scores = scale_scores(attention_scores(Q, K), d_k)
if causal:
    blocked = causal_mask(scores.shape[-1])
    scores = np.where(blocked, -np.inf, scores)
weights = softmax(scores, axis=-1)
return weights @ V, weights
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
