STORY = "his masking reads a constant BLOCKED_SCORE; in a scratch cell at the end he sets it to -1e4 to see what a finite mask does"
PATTERNS = ["question-comment"]
SAVE = {}
EDITS = [
    (
        "above",
        "apply_causal_mask",
        """
import math

BLOCKED_SCORE = float("-inf")  # what a hidden position gets before softmax
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
return scores.masked_fill(causal_mask(scores.size(-1)).to(scores.device), BLOCKED_SCORE)
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
scores = q @ k.mT / math.sqrt(k.size(-1))
if mask is not None:
    scores = scores.masked_fill(mask, BLOCKED_SCORE)
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
else:
    weights = torch.softmax(scores, dim=-1)
weights = self.dropout(weights)
return weights @ v, weights
""",
    ),
    (
        "end",
        None,
        """
# what if the mask used a big negative number instead of -inf?
BLOCKED_SCORE = -1e4
s = torch.zeros(1, 3, 3)
print(torch.softmax(apply_causal_mask(s), dim=-1))  # same thing?
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
