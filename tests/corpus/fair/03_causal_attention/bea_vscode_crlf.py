STORY = "VS Code on Windows with CRLF; asserts, a warning and a print inside the layers"
PATTERNS = ["vscode-save", "crlf", "assert-in-function", "warning-in-function", "print-in-function"]
SAVE = {"editor": "vscode", "crlf": True, "file": "03_causal_attention.ipynb"}
EDITS = [
    ("below", "setup", "import warnings\nVERBOSE = True"),
    (
        "fill",
        "causal_mask",
        """
assert num_tokens > 0, "need at least one token"
return torch.triu(torch.ones(num_tokens, num_tokens), diagonal=1) == 1
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
assert scores.shape[-1] == scores.shape[-2], "scores must be square"
return scores.masked_fill(causal_mask(scores.shape[-1]), float("-inf"))
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
assert q.shape[-1] == k.shape[-1], "q and k need the same width"
scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
if mask is not None:
    if mask.all():
        warnings.warn("every key is blocked for every query")
    scores = scores.masked_fill(mask, float("-inf"))
weights = torch.softmax(scores, dim=-1)
if mask is not None:
    weights = weights.masked_fill(mask.all(dim=-1, keepdim=True), 0.0)
weights = self.dropout(weights)
if VERBOSE:
    print("attention weights:", tuple(weights.shape))
return weights @ v, weights
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
T = x.shape[-2]
if T > self.mask.shape[0]:
    warnings.warn("sequence longer than context_length")
assert x.shape[-1] == self.W_query.in_features
context, _ = self.attention(self.W_query(x), self.W_key(x), self.W_value(x), self.mask[:T, :T])
return context
""",
    ),
]
