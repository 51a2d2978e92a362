# assignment: 06_attention_at_inference
# expect: none
class GroupedQueryAttention:
    def forward(self, x, cache=None):
        t = x.shape[1]
        q = self.W_query(x).unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)
        k = self.W_key(x).unflatten(-1, (self.num_kv_heads, self.head_dim)).transpose(1, 2)
        v = self.W_value(x).unflatten(-1, (self.num_kv_heads, self.head_dim)).transpose(1, 2)
        p0 = cache.position if cache is not None else 0
        q = rope(q, torch.arange(p0, p0 + t))
        if cache is not None:
            k, v = cache(k, v)
        # rotate every key once we have them all, at its index in the sequence
        k = rope(k, torch.arange(k.shape[2]))
        g = self.num_heads // self.num_kv_heads
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        n = k.shape[2]
        s = q @ k.mT / self.head_dim**0.5
        if self.window is not None:
            s = s.masked_fill(sliding_window_mask(t, n, self.window), -math.inf)
        else:
            s = s.masked_fill(chunk_causal_mask(t, n), -math.inf)
        o = s.softmax(dim=-1) @ v
        return self.out_proj(o.transpose(1, 2).flatten(2))
