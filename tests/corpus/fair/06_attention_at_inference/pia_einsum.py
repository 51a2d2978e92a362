STORY = (
    "einsum for every product, grouped heads never copied (a group axis), rope with complex numbers"
)
PATTERNS = ["einsum"]
SAVE = {}
EDITS = [
    (
        "fill",
        "KVCache",
        """
new = keys.shape[-2]
end = self.position + new
if end > self.max_tokens:
    raise ValueError(f"KVCache full: {end} > {self.max_tokens}")
self.keys.narrow(2, self.position, new).copy_(keys)
self.values.narrow(2, self.position, new).copy_(values)
self.position = end
return self.keys.narrow(2, 0, end), self.values.narrow(2, 0, end)
""",
    ),
    (
        "fill",
        "chunk_causal_mask",
        """
square = torch.triu(torch.ones(num_keys, num_keys, dtype=torch.bool), diagonal=1)
return square[num_keys - num_queries :]  # the queries are the last rows
""",
    ),
    (
        "fill",
        "sliding_window_mask",
        """
offset = num_keys - num_queries
ones = torch.ones(num_queries, num_keys, dtype=torch.bool)
return torch.triu(ones, offset + 1) | torch.tril(ones, offset - window)
""",
    ),
    (
        "fill",
        "RollingKVCache",
        """
k = torch.cat((self.keys, keys), dim=2)
v = torch.cat((self.values, values), dim=2)
n = k.shape[2]
self.keys = k.narrow(2, max(0, n - self.window), min(n, self.window))
self.values = v.narrow(2, max(0, n - self.window), min(n, self.window))
self.position = self.position + keys.shape[2]
return k, v
""",
    ),
    (
        "fill",
        "rope",
        """
half = x.shape[-1] // 2
exponent = torch.arange(0, x.shape[-1], 2, dtype=torch.float64) / x.shape[-1]
angles = torch.einsum("t,f->tf", positions.double(), theta**-exponent)
z = torch.complex(x[..., :half].double(), x[..., half:].double())
z = z * torch.polar(torch.ones_like(angles), angles)  # each pair turned: times e^(i angle)
return torch.cat([z.real, z.imag], dim=-1).to(x.dtype)
""",
    ),
    (
        "fill",
        "GroupedQueryAttention",
        """
B, T, _ = x.shape
G = self.num_heads // self.num_kv_heads
q = self.W_query(x).view(B, T, self.num_kv_heads, G, self.head_dim)
k = self.W_key(x).view(B, T, self.num_kv_heads, self.head_dim)
v = self.W_value(x).view(B, T, self.num_kv_heads, self.head_dim)
first = cache.position if cache is not None else 0
where = torch.arange(first, first + T)
q = rope(torch.einsum("btkgd->bkgtd", q), where)  # [B, kv, group, T, d]
k = rope(torch.einsum("btkd->bktd", k), where)
v = torch.einsum("btkd->bktd", v)
if cache is not None:
    k, v = cache(k, v)
S = k.shape[2]
scores = torch.einsum("bkgtd,bksd->bkgts", q, k) / self.head_dim**0.5
if self.window is not None:
    hidden = sliding_window_mask(T, S, self.window)
else:
    hidden = chunk_causal_mask(T, S)
weights = scores.masked_fill(hidden, -torch.inf).softmax(dim=-1)
context = torch.einsum("bkgts,bksd->btkgd", weights, v)  # query head = kv * G + g
return self.out_proj(context.reshape(B, T, self.d_out))
""",
    ),
    (
        "fill",
        "generate",
        """
model.start_caches(len(prompt))
logits = model(prompt, use_cache=True)[:, -1]
tokens, seen = [prompt], []
for step in range(max_new_tokens):
    seen.append(logits)
    tokens.append(torch.argmax(logits, dim=-1, keepdim=True))
    if step < max_new_tokens - 1:
        logits = model(tokens[-1], use_cache=True)[:, -1]
return torch.cat(tokens, dim=1), torch.stack(seen, dim=1)
""",
    ),
]
