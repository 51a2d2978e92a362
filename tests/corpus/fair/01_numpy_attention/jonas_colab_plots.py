STORY = "Colab, inline plots of the saturation experiment, shell escapes and display()"
PATTERNS = ["colab-save", "magics", "display", "question-comment", "block-globals"]
SAVE = {"file": "01_numpy_attention.ipynb", "editor": "colab"}
EDITS = [
    (
        "below",
        "setup",
        """
%matplotlib inline
!ls
import matplotlib.pyplot as plt
""",
    ),
    (
        "fill",
        "softmax",
        """
shifted = x - np.max(x, axis=axis, keepdims=True)
shifted[np.isnan(shifted)] = -np.inf  # -inf - (-inf): a fully masked row?
e = np.exp(shifted)
return e / np.clip(e.sum(axis=axis, keepdims=True), np.finfo(e.dtype).tiny, None)
""",
    ),
    (
        "fill",
        "scale_scores",
        """
return scores / np.sqrt(d_k, dtype=scores.dtype)
""",
    ),
    (
        "fill",
        "attention_scores",
        """
return np.einsum("...ik,...jk", Q, K)  # implicit output: ...ij, right?
""",
    ),
    (
        "fill",
        "causal_mask",
        """
return np.tri(num_tokens, k=-1, dtype=bool).T
""",
    ),
    (
        "below",
        "Experiment.",
        """
widths = [4, 16, 64, 256]
saturation = []
with np.errstate(over="ignore"):
    rng = np.random.default_rng(0)
    for d in widths:
        raw = rng.normal(size=(200, 8, d)) @ rng.normal(size=(d,))
        saturation.append(softmax(raw).max(-1).mean())
plt.plot(widths, saturation, marker="o")
plt.xscale("log")
plt.show()
display(dict(zip(widths, saturation)))
""",
    ),
    (
        "fill",
        "self_attention",
        """
q = X @ W_q
k = X @ W_k
v = X @ W_v
att = scale_scores(attention_scores(q, k), W_k.shape[-1])
if causal:
    att[..., causal_mask(att.shape[-1])] = -np.inf
att = softmax(att)
return att @ v, att
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
return np.eye(len(E), dtype=E.dtype)[token_ids] @ E
""",
    ),
]
