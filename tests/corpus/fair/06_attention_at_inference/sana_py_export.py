# ruff: noqa: E501 (a student's code keeps its long lines)
STORY = "a .py download; every answer in a new cell under its stub, methods patched onto the classes; from math import *"
PATTERNS = [
    "py-export",
    "renamed-file",
    "answer-in-new-cell-below",
    "star-import",
    "help-syntax",
    "block-globals",
]
SAVE = {"file": "sana_06_attention_at_inference.py", "editor": "py"}
EDITS = [
    (
        "below",
        "setup",
        "from math import *\nfrom functools import reduce\ntorch.repeat_interleave?",
    ),
    (
        "below",
        "KVCache",
        """
def _kv_forward(self, keys, values):
    start = self.position
    stop = start + keys.shape[2]
    if stop > self.max_tokens:
        raise ValueError(f"cannot cache tokens {start}..{stop - 1}: max_tokens is {self.max_tokens}")
    self.keys[:, :, start:stop], self.values[:, :, start:stop] = keys, values
    self.position = stop
    return self.keys[:, :, :stop], self.values[:, :, :stop]


KVCache.forward = _kv_forward
""",
    ),
    (
        "below",
        "chunk_causal_mask",
        """
def chunk_causal_mask(num_queries, num_keys):
    return ~torch.ones(num_queries, num_keys, dtype=torch.bool).tril(num_keys - num_queries)
""",
    ),
    (
        "below",
        "rope",
        """
def rope(x, positions, theta=10000.0):
    n = x.shape[-1] // 2
    freqs = torch.tensor([theta ** (-2 * i / x.shape[-1]) for i in range(n)], dtype=torch.float64)
    ang = positions.double().unsqueeze(-1) * freqs
    c, s = torch.cos(ang).to(x.dtype), torch.sin(ang).to(x.dtype)
    lo, hi = x.split(n, dim=-1)
    return torch.cat([lo * c - hi * s, lo * s + hi * c], dim=-1)
""",
    ),
    (
        "below",
        "GroupedQueryAttention",
        """
def _gqa_forward(self, x, cache=None):
    B, T, _ = x.shape
    q = self.W_query(x).reshape(B, T, self.num_heads, self.head_dim).transpose(1, 2)
    k = self.W_key(x).reshape(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
    v = self.W_value(x).reshape(B, T, self.num_kv_heads, self.head_dim).transpose(1, 2)
    start = cache.position if cache is not None else 0
    pos = torch.arange(start, start + T)
    q, k = rope(q, pos), rope(k, pos)
    if cache is not None:
        k, v = cache(k, v)
    g = self.num_heads // self.num_kv_heads
    k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    S = k.shape[2]
    blocked = chunk_causal_mask(T, S) if self.window is None else sliding_window_mask(T, S, self.window)
    w = F.softmax((q @ k.transpose(2, 3) / sqrt(self.head_dim)).masked_fill(blocked, -inf), dim=-1)
    return self.out_proj((w @ v).transpose(1, 2).reshape(B, T, self.d_out))


GroupedQueryAttention.forward = _gqa_forward
""",
    ),
    ("below", "setup", "import torch.nn.functional as F"),
    (
        "below",
        "TinyDecoder",
        """
def _decoder_forward(self, ids, use_cache=False):
    caches = self.caches if use_cache else [None for _ in self.blocks]
    pairs = list(zip(self.blocks, caches))
    x = reduce(lambda h, bc: h + bc[0](h, bc[1]), pairs, self.token_embedding(ids))
    return self.head(x)


TinyDecoder.forward = _decoder_forward
""",
    ),
    (
        "below",
        "test_generate",
        """
for cache_kind in (KVCache, RollingKVCache):
    demo = cache_kind(1, 1, 4, 2)
    result = demo(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 2, 2))
""",
    ),
]
