STORY = "prints F.scaled_dot_product_attention's output before defining her layer in the same cell, compares after; checks her Jacobian norm against autograd"
PATTERNS = ["large-negative"]
SAVE = {}
EDITS = [
    (
        "replace",
        "MultiHeadAttention",
        """
# what I should get (library), for a plain causal head:
torch.manual_seed(0)
qh, kh, vh = torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
expected = F.scaled_dot_product_attention(qh, kh, vh, is_causal=True)
print("library:", expected.shape)


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
        self.last_weights = None

    def attend(self, q, k, v, blocked):
        scores = q @ k.transpose(-2, -1) / self.head_dim ** 0.5
        scores = scores.masked_fill(blocked, -1e30)
        weights = torch.softmax(scores, dim=-1)
        weights = weights.masked_fill(blocked.all(dim=-1, keepdim=True), 0.0)
        return weights

    def forward(self, x, padding=None):
        b, T, _ = x.shape
        split = lambda t: t.view(b, T, self.num_heads, self.head_dim).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.W_query(x)), split(self.W_key(x)), split(self.W_value(x))
        blocked = self.mask[:T, :T]
        if padding is not None:
            blocked = blocked | padding
        blocked = blocked.expand(b, self.num_heads, T, T)
        weights = self.attend(q, k, v, blocked)
        self.last_weights = weights.detach()
        ctx = self.dropout(weights) @ v
        return self.out_proj(ctx.transpose(1, 2).reshape(b, T, self.d_out))


probe = MultiHeadAttention(4, 4, 5, 0.0, 2)
mine = probe.attend(qh, kh, vh, probe.mask) @ vh
print("same as the library:", torch.allclose(mine, expected, atol=1e-6))
""",
    ),
    (
        "replace",
        "softmax_jacobian_norm",
        """
def softmax_jacobian_norm(scores: torch.Tensor) -> torch.Tensor:
    s = torch.softmax(scores.double(), dim=-1)  # float64: the formula below cancels a lot
    # ||diag(s) - s s^T||_F^2 = sum s_i^2 - 2 sum s_i^3 + (sum s_i^2)^2
    sq = (s * s).sum(dim=-1)
    cube = (s * s * s).sum(dim=-1)
    return (sq - 2 * cube + sq * sq).clamp_min(0).sqrt().to(scores.dtype)


row = torch.randn(6)
J = torch.autograd.functional.jacobian(lambda r: torch.softmax(r, dim=-1), row)
by_autograd = torch.linalg.matrix_norm(J)
print("closed form:", softmax_jacobian_norm(row).item(), " autograd:", by_autograd.item())
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
