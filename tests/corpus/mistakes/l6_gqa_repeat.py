# assignment: 06_attention_at_inference
# expect: GroupedQueryAttention=repeat_not_interleave
class GroupedQueryAttention:
    def forward(self, x, cache=None):
        b, t, _ = x.shape
        group = self.num_heads // self.num_kv_heads
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        start = 0 if cache is None else cache.position
        pos = torch.arange(start, start + t)
        q, k = rope(q, pos), rope(k, pos)
        if cache is not None:
            k, v = cache(k, v)
        k = k.repeat(1, group, 1, 1)
        v = v.repeat(1, group, 1, 1)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.head_dim)
        n = k.shape[2]
        if self.window is None:
            mask = chunk_causal_mask(t, n)
        else:
            mask = sliding_window_mask(t, n, self.window)
        weights = torch.softmax(scores.masked_fill(mask, -torch.inf), dim=-1)
        ctx = (weights @ v).transpose(1, 2).contiguous().view(b, t, self.d_out)
        return self.out_proj(ctx)
