STORY = "defines MultiHeadAttention, then in the same cell sweeps head counts with a tqdm.auto bar he never closes"
PATTERNS = ["block-globals"]
SAVE = {}
EDITS = [
    (
        "replace",
        "MultiHeadAttention",
        """
from tqdm.auto import tqdm


class MultiHeadAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads != 0:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer(
            "mask", torch.triu(torch.ones(context_length, context_length, dtype=torch.bool), 1)
        )

    def forward(self, x):
        B, T, _ = x.shape
        h, d = self.num_heads, self.head_dim
        q = self.W_query(x).reshape(B, T, h, d).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(B, T, h, d).permute(0, 2, 3, 1)  # already transposed
        v = self.W_value(x).reshape(B, T, h, d).permute(0, 2, 1, 3)
        att = (q @ k) * d ** -0.5
        att = att.masked_fill(self.mask[:T, :T], float("-inf")).softmax(dim=-1)
        out = self.dropout(att) @ v  # [B, h, T, d]
        out = out.permute(0, 2, 1, 3).reshape(B, T, h * d)
        return self.out_proj(out)


# how many parameters for different head counts? (should not change)
head_counts = [1, 2, 3, 4, 6, 12]
counts = []
bar = tqdm(total=len(head_counts), desc="heads", leave=False)
for n_heads in head_counts:
    layer = MultiHeadAttention(12, 12, 8, 0.0, n_heads)
    counts.append(sum(p.numel() for p in layer.parameters()))
    bar.update(1)
print(dict(zip(head_counts, counts)))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
