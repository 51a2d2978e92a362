# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "VS Code on Windows (CRLF), renamed; asserts and a warning in his functions; float32 cos/sin tables from torch.outer"
PATTERNS = [
    "vscode-save",
    "crlf",
    "renamed-file",
    "assert-in-function",
    "warning-in-function",
    "print-in-function",
]
SAVE = {"file": "ravi_lesson6.ipynb", "editor": "vscode", "crlf": True}
EDITS = [
    ("below", "setup", "import warnings"),
    (
        "fill",
        "KVCache",
        """
assert keys.shape == values.shape, "keys and values must have the same shape"
t = keys.shape[-2]
free = self.max_tokens - self.position
if t > free:
    raise ValueError(f"{t} new tokens but only {free} free slots")
if t == free:
    warnings.warn("the KV cache is now full")
self.keys[..., self.position : self.position + t, :] = keys
self.values[..., self.position : self.position + t, :] = values
self.position += t
return self.keys[..., : self.position, :], self.values[..., : self.position, :]
""",
    ),
    (
        "fill",
        "sliding_window_mask",
        """
assert 1 <= num_queries <= num_keys and window >= 1
p = torch.arange(num_queries).view(-1, 1) + (num_keys - num_queries)
j = torch.arange(num_keys).view(1, -1)
distance = p - j  # how far back key j is
return (distance < 0) | (distance >= window)
""",
    ),
    (
        "fill",
        "RollingKVCache",
        """
assert keys.shape[:2] == self.keys.shape[:2], "batch and heads must match the cache"
both_k = torch.cat([self.keys, keys], dim=-2)
both_v = torch.cat([self.values, values], dim=-2)
start = max(both_k.shape[-2] - self.window, 0)
self.keys, self.values = both_k[..., start:, :], both_v[..., start:, :]
self.position += keys.shape[-2]
return both_k, both_v
""",
    ),
    (
        "fill",
        "rope",
        """
assert x.shape[-1] % 2 == 0, "head_dim must be even"
d = x.shape[-1]
inv = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
table = torch.outer(positions.to(torch.float32), inv)  # [T, d/2]
cos, sin = table.cos().to(x.dtype), table.sin().to(x.dtype)
a, b = x[..., : d // 2], x[..., d // 2 :]
return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)
""",
    ),
    (
        "fill",
        "GroupedQueryAttention",
        """
batch, t, _ = x.shape
assert t <= self.context_length
q = self.W_query(x).reshape(batch, t, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
k = self.W_key(x).reshape(batch, t, self.num_kv_heads, self.head_dim).permute(0, 2, 1, 3)
v = self.W_value(x).reshape(batch, t, self.num_kv_heads, self.head_dim).permute(0, 2, 1, 3)
offset = cache.position if cache is not None else 0
positions = offset + torch.arange(t)
q, k = rope(q, positions), rope(k, positions)
if cache is not None:
    k, v = cache(k, v)
    assert k.shape[1] == self.num_kv_heads
group = self.num_heads // self.num_kv_heads
k = torch.repeat_interleave(k, repeats=group, dim=1)
v = torch.repeat_interleave(v, repeats=group, dim=1)
scores = (q @ k.transpose(-2, -1)) * self.head_dim ** -0.5
if self.window is not None:
    mask = sliding_window_mask(t, k.shape[-2], self.window)
else:
    mask = chunk_causal_mask(t, k.shape[-2])
weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
out = (weights @ v).permute(0, 2, 1, 3).reshape(batch, t, self.d_out)
return self.out_proj(out)
""",
    ),
    (
        "fill",
        "generate",
        """
assert prompt.dim() == 2
model.start_caches(prompt.shape[0])
logits = model(prompt, use_cache=True)[:, -1]
ids, history = prompt, []
for step in range(max_new_tokens):
    history.append(logits)
    ids = torch.cat([ids, logits.argmax(dim=-1, keepdim=True)], dim=1)
    if step + 1 == max_new_tokens:
        break
    logits = model(ids[:, -1:], use_cache=True)[:, -1]
if max_new_tokens > 100:
    print("generated", max_new_tokens, "tokens")
return ids, torch.stack(history, dim=1)
""",
    ),
]
