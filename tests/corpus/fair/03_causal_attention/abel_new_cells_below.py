STORY = "answers in new cells right under the stubs; math's star import for sqrt; help with ?"
PATTERNS = ["answer-in-new-cell-below", "star-import", "help-syntax"]
SAVE = {}
EDITS = [
    ("below", "setup", "from math import *"),
    (
        "below",
        "causal_mask",
        """
def causal_mask(num_tokens):
    rows = torch.arange(num_tokens).view(-1, 1)
    cols = torch.arange(num_tokens).view(1, -1)
    return cols > rows
""",
    ),
    (
        "below",
        "apply_causal_mask",
        """
def apply_causal_mask(scores):
    return scores.masked_fill(causal_mask(scores.shape[-1]), -inf)
""",
    ),
    (
        "below",
        "ScaledDotProductAttention",
        """
nn.Dropout?
class ScaledDotProductAttention(ScaledDotProductAttention):
    def forward(self, q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / sqrt(k.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(mask, -inf)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights.masked_fill(mask.all(-1, keepdim=True), 0)
        weights = self.dropout(weights)
        return weights @ v, weights
""",
    ),
    (
        "below",
        "CausalAttention",
        """
def _causal_forward(self, x):
    T = x.shape[-2]
    out, _ = self.attention(self.W_query(x), self.W_key(x), self.W_value(x), mask=self.mask[:T, :T])
    return out

CausalAttention.forward = _causal_forward
""",
    ),
]
