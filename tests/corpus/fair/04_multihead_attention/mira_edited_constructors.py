# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "rewrote both constructors (extra attributes, her own mask buffer) keeping the documented signature"
PATTERNS = ["edited-constructor", "float32-contract"]
SAVE = {}
EDITS = [
    (
        "replace",
        "MultiHeadAttentionWrapper",
        '''
class MultiHeadAttentionWrapper(nn.Module):
    """num_heads independent CausalAttention heads, outputs concatenated in head order."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.out_features = num_heads * d_out
        heads = []
        for _ in range(num_heads):
            heads.append(CausalAttention(d_in, d_out, context_length, dropout, qkv_bias))
        self.heads = nn.ModuleList(heads)

    def forward(self, x):
        out = torch.cat([head(x) for head in self.heads], dim=-1)
        assert out.shape[-1] == self.out_features
        return out
''',
    ),
    (
        "replace",
        "MultiHeadAttention",
        '''
class MultiHeadAttention(nn.Module):
    """Causal multi-head attention with fused Q/K/V projections and an output projection."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        if d_out % num_heads:
            raise ValueError(f"d_out ({d_out}) must be divisible by num_heads ({num_heads})")
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.scale = self.head_dim ** -0.5
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        future = torch.arange(context_length)[None, :] > torch.arange(context_length)[:, None]
        self.register_buffer("mask", future)

    def forward(self, x):
        b, T, _ = x.shape
        shape = (b, T, self.num_heads, self.head_dim)
        q = self.W_query(x).view(shape).transpose(1, 2)
        k = self.W_key(x).view(shape).transpose(1, 2)
        v = self.W_value(x).view(shape).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(self.mask[:T, :T], torch.finfo(scores.dtype).min)
        weights = self.dropout(torch.softmax(scores, dim=-1).to(x.dtype))
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, T, self.d_out))
''',
    ),
    (
        "fill",
        "gpt2_attention_parameters",
        """
layer = MultiHeadAttention(768, 768, 1024, 0.0, 12)
return sum(p.numel() for p in layer.parameters())
""",
    ),
]
