STORY = "times his attention for growing T with a time.sleep between runs (about 40 s) in the CausalAttention cell, defines the class under the loop, times it in the next cell"
PATTERNS = ["block-globals", "torch-matmul"]
SAVE = {}
EDITS = [
    (
        "fill",
        "ScaledDotProductAttention",
        """
scores = torch.matmul(q, k.transpose(-1, -2)) * k.shape[-1] ** -0.5
if mask is not None:
    scores = scores.masked_fill(mask, float("-inf"))
weights = torch.softmax(scores, dim=-1).nan_to_num(nan=0.0)
weights = self.dropout(weights)
return torch.matmul(weights, v), weights
""",
    ),
    (
        "replace",
        "CausalAttention",
        """
import time

sdpa_ms = {}
attn = ScaledDotProductAttention().eval()
for T in (64, 128, 256, 512, 1024):
    q = torch.randn(4, T, 64)
    start = time.perf_counter()
    for _ in range(5):
        attn(q, q, q, causal_mask(T))
    sdpa_ms[T] = (time.perf_counter() - start) / 5 * 1000
    print(f"T={T:5d}: {sdpa_ms[T]:8.2f} ms")
    time.sleep(8)  # same conditions for every size


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
        n = x.size(-2)
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        return self.attention(q, k, v, mask=self.mask[:n, :n])[0]
""",
    ),
    (
        "below",
        "test_causal_attention_dropout",
        """
layer = CausalAttention(64, 64, 1024, 0.0).eval()
for T in sdpa_ms:
    x = torch.randn(4, T, 64)
    start = time.perf_counter()
    for _ in range(5):
        layer(x)
    print(f"T={T:5d}: whole layer {(time.perf_counter() - start) / 5 * 1000:8.2f} ms")
""",
    ),
]
# ruff: noqa: E501 (a student's code keeps its long lines)
