# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "Colab copy: torch.where with -1e9 for the masks' effect, index_copy_ into the cache, rotate_half as in Hugging Face"
PATTERNS = ["colab-save", "renamed-file", "magics", "display", "large-negative", "torch-where"]
SAVE = {"file": "Copy of 06_attention_at_inference.ipynb", "editor": "colab"}
EDITS = [
    ("below", "setup", "%matplotlib inline\nfrom IPython.display import display"),
    (
        "fill",
        "KVCache",
        """
n_new = keys.shape[2]
if self.position + n_new > self.max_tokens:
    raise ValueError("KV cache overflow: %d + %d > %d" % (self.position, n_new, self.max_tokens))
slots = torch.arange(self.position, self.position + n_new)
self.keys.index_copy_(2, slots, keys)
self.values.index_copy_(2, slots, values)
self.position += n_new
return self.keys[:, :, :self.position], self.values[:, :, :self.position]
""",
    ),
    (
        "fill",
        "chunk_causal_mask",
        """
q_pos = torch.arange(num_keys - num_queries, num_keys).unsqueeze(1)
k_pos = torch.arange(num_keys).unsqueeze(0)
return torch.where(k_pos > q_pos, True, False)
""",
    ),
    (
        "fill",
        "rope",
        """
dim = x.shape[-1]
inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2).double() / dim))
freqs = positions.double()[:, None] * inv_freq[None, :]
emb = torch.cat((freqs, freqs), dim=-1)
cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
x1, x2 = x[..., : dim // 2], x[..., dim // 2 :]
rotate_half = torch.cat((-x2, x1), dim=-1)
return x * cos + rotate_half * sin
""",
    ),
    (
        "fill",
        "GroupedQueryAttention",
        """
bsz, q_len, _ = x.size()
query_states = self.W_query(x).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
key_states = self.W_key(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
value_states = self.W_value(x).view(bsz, q_len, self.num_kv_heads, self.head_dim).transpose(1, 2)
past = 0 if cache is None else cache.position
position_ids = torch.arange(past, past + q_len)
query_states = rope(query_states, position_ids)
key_states = rope(key_states, position_ids)
if cache is not None:
    key_states, value_states = cache(key_states, value_states)
n_rep = self.num_heads // self.num_kv_heads
kv_len = key_states.shape[2]
key_states = key_states[:, :, None].expand(bsz, self.num_kv_heads, n_rep, kv_len, self.head_dim).reshape(bsz, self.num_heads, kv_len, self.head_dim)
value_states = value_states[:, :, None].expand(bsz, self.num_kv_heads, n_rep, kv_len, self.head_dim).reshape(bsz, self.num_heads, kv_len, self.head_dim)
attn = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
if self.window is None:
    blocked = chunk_causal_mask(q_len, kv_len)
else:
    blocked = sliding_window_mask(q_len, kv_len, self.window)
attn = torch.where(blocked, torch.tensor(-1e9, dtype=attn.dtype), attn)
attn = torch.nn.functional.softmax(attn, dim=-1)
out = torch.matmul(attn, value_states).transpose(1, 2).reshape(bsz, q_len, self.d_out)
return self.out_proj(out)
""",
    ),
    (
        "fill",
        "generate",
        """
model.start_caches(prompt.size(0))
out = prompt
scores = []
next_logits = model(prompt, use_cache=True)[:, -1]
while True:
    scores.append(next_logits)
    out = torch.cat([out, next_logits.argmax(-1, keepdim=True)], dim=-1)
    if len(scores) == max_new_tokens:
        break
    next_logits = model(out[:, -1:], use_cache=True)[:, -1]
return out, torch.stack(scores, dim=1)
""",
    ),
    (
        "below",
        "test_generate",
        "%%time\nwith torch.no_grad():\n    display(generate(TinyDecoder(10, 8, 12, 2, 1, 1).eval(), torch.tensor([[1, 2]]), 5)[0])",
    ),
]
