STORY = "einsum, F.dropout with the module's p, and a constructor that builds its own mask"
PATTERNS = ["einsum", "edited-constructor"]
SAVE = {}
EDITS = [
    ("below", "setup", "import torch.nn.functional as F"),
    (
        "fill",
        "causal_mask",
        """
return torch.triu(torch.full((num_tokens, num_tokens), True), diagonal=1)
""",
    ),
    (
        "fill",
        "apply_causal_mask",
        """
out = scores.clone()
out[..., causal_mask(scores.shape[-1])] = float("-inf")
return out
""",
    ),
    (
        "fill",
        "ScaledDotProductAttention",
        """
scores = torch.einsum("...qd,...kd->...qk", q, k) / k.shape[-1] ** 0.5
if mask is not None:
    scores = scores.masked_fill(mask, float("-inf"))
    empty = mask.all(dim=-1, keepdim=True)
    scores = scores.masked_fill(empty, 0.0)  # any finite row; zeroed after softmax
weights = scores.softmax(dim=-1)
if mask is not None:
    weights = weights.masked_fill(empty, 0.0)
weights = F.dropout(weights, p=self.dropout.p, training=self.training)
return torch.einsum("...qk,...kd->...qd", weights, v), weights
""",
    ),
    (
        "replace",
        "CausalAttention",
        '''
class CausalAttention(nn.Module):
    """Causal self-attention: nn.Linear projections, a mask buffer, dropout on the weights."""

    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.context_length = context_length
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.attention = ScaledDotProductAttention(dropout)
        ones = torch.ones(context_length, context_length, dtype=torch.bool)
        self.register_buffer("mask", torch.triu(ones, diagonal=1))

    def forward(self, x):
        T = x.shape[-2]
        assert T <= self.context_length
        q = torch.einsum("...ti,oi->...to", x, self.W_query.weight)
        if self.W_query.bias is not None:
            q = q + self.W_query.bias
        context, _ = self.attention(q, self.W_key(x), self.W_value(x), mask=self.mask[:T, :T])
        return context
''',
    ),
]
