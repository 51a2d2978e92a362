STORY = "sweeps d_k with a tqdm bar she updates by hand and never closes, in the cell that defines scale_scores"
PATTERNS = ["block-globals", "question-comment"]
SAVE = {}
EDITS = [
    (
        "replace",
        "scale_scores",
        '''
import math
from tqdm import tqdm

# how fast does the spread of q.k grow with d_k?
widths = [4, 16, 64, 256, 1024]
spread = {}
bar = tqdm(total=len(widths), desc="d_k sweep")
sweep_rng = np.random.default_rng(42)
for d in widths:
    q = sweep_rng.normal(size=(200, d))
    k = sweep_rng.normal(size=(200, d))
    spread[d] = float((q * k).sum(axis=-1).std())
    bar.set_postfix(std=f"{spread[d]:.1f}")
    bar.update()
print({d: round(s / math.sqrt(d), 2) for d, s in spread.items()})  # all close to 1?


def scale_scores(scores: np.ndarray, d_k: int) -> np.ndarray:
    """Divide by sqrt(d_k): the std of q.k grows like sqrt(d_k) (see the sweep above)."""
    factor = 1.0 / math.sqrt(d_k)  # a python float, so float32 stays float32
    return np.asarray(scores) * factor
''',
    ),
    (
        "fill",
        "causal_mask",
        """
i = np.arange(num_tokens)[:, None]
j = np.arange(num_tokens)[None, :]
return j > i
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
