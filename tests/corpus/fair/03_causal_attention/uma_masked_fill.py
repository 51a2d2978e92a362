STORY = "masked_fill with -inf, then nan_to_num for the rows that see nothing"
PATTERNS = ["question-comment"]
SAVE = {}
EDITS = [
    (
        "fill",
        "causal_mask",
        """
return torch.ones(num_tokens, num_tokens).triu(diagonal=1).bool()
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
T = scores.shape[-1]
return scores.masked_fill(causal_mask(T), float("-inf"))
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
scores = q @ k.transpose(-2, -1) / (k.shape[-1] ** 0.5)
if mask is not None:
    scores = scores.masked_fill(mask, float("-inf"))
weights = torch.softmax(scores, dim=-1)
# a row where every key is blocked is NaN here: should it be 0?
weights = torch.nan_to_num(weights, nan=0.0)
weights = self.dropout(weights)
return weights @ v, weights
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
T = x.shape[-2]
context, _ = self.attention(self.W_query(x), self.W_key(x), self.W_value(x), self.mask[:T, :T])
return context
""",
    ),
]
