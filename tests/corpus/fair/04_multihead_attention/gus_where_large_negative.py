STORY = "torch.where with -1e9 for the future, torch.matmul instead of @"
PATTERNS = ["torch-where", "large-negative", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "fill",
        "MultiHeadAttentionWrapper",
        """
return torch.cat(tuple(map(lambda head: head(x), self.heads)), dim=2)
""",
    ),
    (
        "fill",
        "wrapper_d_out",
        """
d_out = 1
assert 2 * d_out == 2
return d_out
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
B, T, _ = x.shape
def heads(t):
    return t.reshape(B, T, self.num_heads, self.head_dim).transpose(1, 2)
q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
scores = torch.matmul(q, k.transpose(-2, -1)) / torch.tensor(float(self.head_dim)).sqrt()
scores = torch.where(self.mask[:T, :T], torch.tensor(-1e9, dtype=scores.dtype), scores)
w = self.dropout(torch.softmax(scores, dim=-1))
ctx = torch.matmul(w, v).transpose(1, 2).reshape(B, T, self.d_out)
return self.out_proj(ctx)
""",
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
emb, heads = 768, 12
head_dim = emb // heads
per_projection = emb * heads * head_dim
return 3 * per_projection + emb * emb + emb
""",
    ),
]
