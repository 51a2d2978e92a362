# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "her rope and attention step live in a module written by %%writefile; the caches call torch functions by name"
PATTERNS = ["writefile-helper", "magics", "float32-contract"]
SAVE = {}
EDITS = [
    (
        "above",
        "KVCache",
        '''
%%writefile vera_inference_tools.py
import math

import torch


def rotate(x, positions, theta):
    """Turn (x[i], x[i + h]) by positions * theta ** (-2i / d), in float64, back to x's dtype."""
    d = x.shape[-1]
    exponents = torch.arange(0, d, 2, dtype=torch.float64) / d
    angles = positions.to(torch.float64)[:, None] * torch.pow(theta, -exponents)[None, :]
    c = torch.cos(angles).to(dtype=x.dtype)
    s = torch.sin(angles).to(dtype=x.dtype)
    left, right = torch.chunk(x, 2, dim=-1)
    return torch.cat([left * c - right * s, right * c + left * s], dim=-1)


def attend(q, k, v, blocked):
    """Softmax attention of q [b, h, t, d] over k, v [b, h, s, d]; blocked [t, s] True = hidden."""
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(blocked, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)
''',
    ),
    ("above", "KVCache", "import vera_inference_tools as tools"),
    (
        "fill",
        "KVCache",
        """
count = keys.size(2)
if self.position + count > self.max_tokens:
    raise ValueError(f"max_tokens={self.max_tokens} exceeded")
torch.Tensor.copy_(self.keys[:, :, self.position : self.position + count], keys)
torch.Tensor.copy_(self.values[:, :, self.position : self.position + count], values)
self.position += count
assert self.keys.dtype == torch.float32  # the buffers stay float32
return self.keys[:, :, : self.position], self.values[:, :, : self.position]
""",
    ),
    (
        "fill",
        "RollingKVCache",
        """
merged_k = torch.cat([self.keys, keys], dim=2)
merged_v = torch.cat([self.values, values], dim=2)
self.keys = torch.narrow(merged_k, 2, max(0, merged_k.size(2) - self.window), min(self.window, merged_k.size(2)))
self.values = torch.narrow(merged_v, 2, max(0, merged_v.size(2) - self.window), min(self.window, merged_v.size(2)))
self.position += keys.size(2)
return merged_k, merged_v
""",
    ),
    (
        "fill",
        "rope",
        """
return tools.rotate(x, positions, theta)
""",
    ),
    (
        "fill",
        "GroupedQueryAttention",
        """
b, t, _ = x.shape
q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
k = self.W_key(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
v = self.W_value(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
p0 = cache.position if cache is not None else 0
q = rope(q, torch.arange(p0, p0 + t))
k = rope(k, torch.arange(p0, p0 + t))
if cache is not None:
    k, v = cache(k, v)
reps = self.num_heads // self.num_kv_heads
k = k.repeat_interleave(reps, dim=1)
v = v.repeat_interleave(reps, dim=1)
if self.window:
    blocked = sliding_window_mask(t, k.size(2), self.window)
else:
    blocked = chunk_causal_mask(t, k.size(2))
out = tools.attend(q, k, v, blocked)
return self.out_proj(out.transpose(1, 2).reshape(b, t, self.d_out).to(torch.float32))
""",
    ),
]
