STORY = "answers in NumPy, then in a scratch cell at the end rebinds np to torch to see if his code ports"
PATTERNS = ["question-comment"]
SAVE = {}
EDITS = [
    (
        "fill",
        "softmax",
        """
x = np.asarray(x)
finite_max = np.max(np.where(np.isneginf(x), np.finfo(x.dtype).min, x), axis=axis, keepdims=True)
z = np.exp(x - finite_max)
s = np.sum(z, axis=axis, keepdims=True)
return np.divide(z, s, out=np.zeros_like(z), where=s > 0)
""",
    ),
    (
        "fill",
        "attention_scores",
        """
return np.matmul(Q, np.moveaxis(K, -1, -2))
""",
    ),
    (
        "fill",
        "embed_one_hot",
        """
return np.take(E, np.asarray(token_ids), axis=0)
""",
    ),
    (
        "end",
        None,
        """
# scratch: does the same code work on torch tensors if np is torch?
import torch as np
try:
    print(softmax(np.tensor([[1.0, 2.0, 3.0]])))
except Exception as err:  # it doesn't, np.isneginf etc. are numpy only?
    print("no:", type(err).__name__, err)
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
