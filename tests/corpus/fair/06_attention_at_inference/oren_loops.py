# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "loops everywhere: a token at a time into the cache, a pair at a time for rope, a head at a time"
PATTERNS = ["explicit-loops", "question-comment"]
SAVE = {}
EDITS = [
    (
        "fill",
        "KVCache",
        """
t = keys.shape[2]
if self.position + t > self.max_tokens:
    raise ValueError(f"no room for {t} more tokens: {self.position} of {self.max_tokens} used")
for i in range(t):
    self.keys[:, :, self.position + i] = keys[:, :, i]
    self.values[:, :, self.position + i] = values[:, :, i]
self.position += t
return self.keys[:, :, : self.position], self.values[:, :, : self.position]
""",
    ),
    (
        "fill",
        "chunk_causal_mask",
        """
mask = torch.zeros(num_queries, num_keys, dtype=torch.bool)
first = num_keys - num_queries  # the position of query 0
for i in range(num_queries):
    for j in range(num_keys):
        mask[i, j] = j > first + i
return mask
""",
    ),
    (
        "fill",
        "sliding_window_mask",
        """
mask = torch.ones(num_queries, num_keys, dtype=torch.bool)
for i in range(num_queries):
    p = num_keys - num_queries + i
    for j in range(max(0, p - window + 1), p + 1):
        mask[i, j] = False
return mask
""",
    ),
    (
        "fill",
        "RollingKVCache",
        """
for i in range(keys.shape[2]):  # one token at a time: the oldest drops out when full
    self.keys = torch.cat([self.keys, keys[:, :, i : i + 1]], dim=2)
    self.values = torch.cat([self.values, values[:, :, i : i + 1]], dim=2)
    self.position += 1
kept = self.keys.shape[2]
returned = self.keys, self.values
if kept > self.window:
    self.keys = self.keys[:, :, kept - self.window :]
    self.values = self.values[:, :, kept - self.window :]
return returned
""",
    ),
    (
        "fill",
        "rope",
        """
d = x.shape[-1]
h = d // 2
out = x.clone()
for i in range(h):
    angle = positions.to(torch.float64) * theta ** (-2.0 * i / d)  # [T]
    c = torch.cos(angle).to(x.dtype)
    s = torch.sin(angle).to(x.dtype)
    a, b = x[..., i], x[..., i + h]  # [..., T]
    out[..., i] = a * c - b * s
    out[..., i + h] = a * s + b * c
return out
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
start = 0
if cache is not None:
    start = cache.position  # the tokens already cached come first
pos = torch.arange(start, start + t)
q = rope(q, pos)
k = rope(k, pos)
if cache is not None:
    k, v = cache(k, v)
T_k = k.shape[2]
if self.window is None:
    blocked = chunk_causal_mask(t, T_k)
else:
    blocked = sliding_window_mask(t, T_k, self.window)
per_head = self.num_heads // self.num_kv_heads
outputs = []
for h in range(self.num_heads):
    kv = h // per_head  # which shared head does query head h read?
    scores = q[:, h] @ k[:, kv].transpose(-2, -1) / math.sqrt(self.head_dim)
    scores = scores.masked_fill(blocked, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    outputs.append(weights @ v[:, kv])
return self.out_proj(torch.cat(outputs, dim=-1))
""",
    ),
    (
        "fill",
        "TinyDecoder",
        """
x = self.token_embedding(ids)
for i in range(len(self.blocks)):
    cache = self.caches[i] if use_cache else None
    x = x + self.blocks[i](x, cache)
return self.head(x)
""",
    ),
    (
        "fill",
        "generate",
        """
model.start_caches(prompt.shape[0])
ids = prompt
all_logits = []
logits = model(prompt, use_cache=True)[:, -1, :]
for i in range(max_new_tokens):
    all_logits.append(logits)
    new = torch.argmax(logits, dim=-1).view(-1, 1)
    ids = torch.cat([ids, new], dim=1)
    if i < max_new_tokens - 1:  # the last token needs no forward pass?
        logits = model(new, use_cache=True)[:, -1, :]
return ids, torch.stack(all_logits, dim=1)
""",
    ),
]
