STORY = "checks his layer against nn.MultiheadAttention with copied weights, and his wrapper against per-head F.scaled_dot_product_attention, results kept in variables and printed"
PATTERNS = ["torch-matmul"]
SAVE = {}
EDITS = [
    (
        "replace",
        "MultiHeadAttentionWrapper",
        """
class MultiHeadAttentionWrapper(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.heads = nn.ModuleList(
            CausalAttention(d_in, d_out, context_length, dropout, qkv_bias)
            for _ in range(num_heads)
        )

    def forward(self, x):
        outs = []
        for head in self.heads:
            outs.append(head(x))
        return torch.concat(outs, dim=-1)


torch.manual_seed(1)
wrap = MultiHeadAttentionWrapper(4, 3, 6, 0.0, num_heads=2)
xs = torch.randn(2, 6, 4)
per_head = [
    F.scaled_dot_product_attention(h.W_query(xs), h.W_key(xs), h.W_value(xs), is_causal=True)
    for h in wrap.heads
]
expected = torch.cat(per_head, dim=-1)
print("wrapper == sdpa per head:", torch.allclose(wrap(xs), expected, atol=1e-6))
""",
    ),
    (
        "fill",
        "MultiHeadAttention",
        """
B, T, _ = x.shape
def heads(t):
    return t.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)
q, k, v = heads(self.W_query(x)), heads(self.W_key(x)), heads(self.W_value(x))
scores = torch.matmul(q, k.transpose(2, 3)) / self.head_dim ** 0.5
scores = scores.masked_fill(self.mask[:T, :T], float("-inf"))
weights = self.dropout(torch.softmax(scores, dim=-1))
merged = torch.matmul(weights, v).transpose(1, 2).contiguous().view(B, T, self.d_out)
return self.out_proj(merged)
""",
    ),
    (
        "below",
        "test_mha_heads",
        """
torch.manual_seed(2)
mine = MultiHeadAttention(6, 6, 10, 0.0, num_heads=2).eval()
theirs = nn.MultiheadAttention(6, 2, bias=True, batch_first=True).eval()
with torch.no_grad():
    theirs.in_proj_weight.copy_(torch.cat([mine.W_query.weight, mine.W_key.weight, mine.W_value.weight]))
    theirs.in_proj_bias.zero_()
    theirs.out_proj.weight.copy_(mine.out_proj.weight)
    theirs.out_proj.bias.copy_(mine.out_proj.bias)
x6 = torch.randn(3, 7, 6)
blocked = torch.triu(torch.ones(7, 7, dtype=torch.bool), 1)
torch_out, torch_weights = theirs(x6, x6, x6, attn_mask=blocked)
my_out = mine(x6)
print("same as nn.MultiheadAttention:", torch.allclose(my_out, torch_out, atol=1e-6))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
