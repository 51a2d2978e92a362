# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = (
    "torch.stack then flatten for the wrapper; one helper computing Linear sizes for exercise 3.3"
)
PATTERNS = ["shared-helper", "display"]
SAVE = {}
EDITS = [
    (
        "above",
        "MultiHeadAttentionWrapper",
        '''
def linear_parameters(d_in, d_out, bias=True):
    """Parameters of nn.Linear(d_in, d_out, bias)."""
    return d_in * d_out + (d_out if bias else 0)


def heads_out_features(num_heads, d_out):
    return num_heads * d_out
''',
    ),
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
stacked = torch.stack([head(x) for head in self.heads], dim=-2)  # [b, T, heads, d_out]
merged = stacked.flatten(start_dim=-2)
assert merged.shape[-1] == heads_out_features(len(self.heads), stacked.shape[-1])
return merged
""",
    ),
    (
        "fill",
        "wrapper_d_out",
        """
for d_out in range(1, 10):
    if heads_out_features(2, d_out) == 2:
        return d_out
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
b, T, _ = x.shape
q = self.W_query(x).reshape(b, T, self.num_heads, -1).transpose(1, 2)
k = self.W_key(x).reshape(b, T, self.num_heads, -1).transpose(1, 2)
v = self.W_value(x).reshape(b, T, self.num_heads, -1).transpose(1, 2)
scores = q @ k.mT / q.shape[-1] ** 0.5
scores = scores.masked_fill(self.mask[:T, :T], -torch.inf)
weights = self.dropout(scores.softmax(-1))
return self.out_proj((weights @ v).transpose(1, 2).flatten(2))
""",
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
d = 768
return 3 * linear_parameters(d, d, bias=False) + linear_parameters(d, d)
""",
    ),
    (
        "end",
        None,
        """
display({"wrapper d_out": wrapper_d_out(), "GPT-2 attention parameters": gpt2_attention_parameters()})
""",
    ),
]
