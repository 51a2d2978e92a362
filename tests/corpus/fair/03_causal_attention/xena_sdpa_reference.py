STORY = "keeps F.scaled_dot_product_attention's answers in variables beside her classes: computed before her def, compared after it, in the same cells"
PATTERNS = ["large-negative"]
SAVE = {}
EDITS = [
    (
        "replace",
        "ScaledDotProductAttention",
        """
import torch.nn.functional as F

torch.manual_seed(0)
q_demo, k_demo, v_demo = torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 4)
blocked_demo = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
expected = F.scaled_dot_product_attention(q_demo, k_demo, v_demo, attn_mask=~blocked_demo)  # True = keep there!


class ScaledDotProductAttention(nn.Module):
    def __init__(self, dropout: float = 0.0) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / k.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(mask, -1e9)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            everything_blocked = mask.all(dim=-1, keepdim=True)
            weights = weights.masked_fill(everything_blocked, 0.0)
        weights = self.dropout(weights)
        return weights @ v, weights


mine, _ = ScaledDotProductAttention()(q_demo, k_demo, v_demo, blocked_demo)
print("same as F.scaled_dot_product_attention:", torch.allclose(mine, expected, atol=1e-6))
""",
    ),
    (
        "replace",
        "CausalAttention",
        """
x_demo = torch.randn(2, 5, 8)
lib_out = F.scaled_dot_product_attention(x_demo, x_demo, x_demo, is_causal=True)
print("library output:", tuple(lib_out.shape))


class CausalAttention(nn.Module):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attention = ScaledDotProductAttention(dropout)
        self.register_buffer("mask", causal_mask(context_length))

    def forward(self, x):
        T = x.shape[-2]
        out, _ = self.attention(
            self.W_query(x), self.W_key(x), self.W_value(x), self.mask[:T, :T]
        )
        return out


plain = CausalAttention(8, 8, 5, 0.0).eval()
with torch.no_grad():
    for lin in (plain.W_query, plain.W_key, plain.W_value):
        lin.weight.copy_(torch.eye(8))
print("same as the library:", torch.allclose(plain(x_demo), lib_out, atol=1e-6))
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
