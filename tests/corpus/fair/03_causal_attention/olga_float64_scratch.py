STORY = "answers in float32 as asked; in a scratch cell at the end she switches torch's default dtype to float64 to compare the weights"
PATTERNS = ["question-comment", "torch-where"]
SAVE = {}
EDITS = [
    (
        "fill",
        "causal_mask",
        """
rows = torch.arange(num_tokens).view(-1, 1)
cols = torch.arange(num_tokens).view(1, -1)
return torch.where(cols > rows, True, False)
""",
    ),
    (
        "fill",
        "CausalAttention",
        """
T = x.shape[-2]
queries = self.W_query(x)
keys = self.W_key(x)
values = self.W_value(x)
out, _weights = self.attention(queries, keys, values, self.mask[:T, :T])
return out
""",
    ),
    (
        "end",
        None,
        """
# do the weights change in float64?
torch.set_default_dtype(torch.float64)
torch.manual_seed(3)
layer64 = CausalAttention(16, 16, context_length=12, dropout=0.0)
x64 = torch.randn(1, 12, 16)
_, w64 = layer64.attention(layer64.W_query(x64), layer64.W_key(x64), layer64.W_value(x64), mask=layer64.mask)
print(w64.dtype, w64[0, :3, :3])
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
