# assignment: 06_attention_at_inference
# expect: GroupedQueryAttention=repeated_before_caching
class GroupedQueryAttention:
    def forward(self, x, cache=None):
        b, t, _ = x.shape
        g = self.num_heads // self.num_kv_heads
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        start = cache.position if cache is not None else 0
        pos = torch.arange(start, start + t)
        q, k = rope(q, pos), rope(k, pos)
        k = k.repeat_interleave(g, dim=1)
        v = v.repeat_interleave(g, dim=1)
        if cache is not None:
            k, v = cache(k, v)
        n = k.shape[2]
        if self.window is None:
            mask = chunk_causal_mask(t, n)
        else:
            mask = sliding_window_mask(t, n, self.window)
        s = (q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)).masked_fill(mask, -torch.inf)
        out = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, self.d_out)
        return self.out_proj(out)
