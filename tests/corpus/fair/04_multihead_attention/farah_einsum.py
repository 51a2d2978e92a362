STORY = "einsum for the per-head scores, unflatten/flatten for the split and the merge"
PATTERNS = ["einsum"]
SAVE = {}
EDITS = [
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
return torch.cat([head(x) for head in self.heads], -1)
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
T = x.shape[1]
split = lambda t: t.unflatten(-1, (self.num_heads, self.head_dim)).permute(0, 2, 1, 3)
q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / self.head_dim ** 0.5
scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
weights = self.dropout(scores.softmax(dim=-1))
context = torch.einsum("bhqk,bhkd->bqhd", weights, v).flatten(-2)
return self.out_proj(context)
""",
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
return 4 * 768 * 768 + 768
""",
    ),
]
