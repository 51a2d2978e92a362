# assignment: 06_attention_at_inference
# expect: none
class GroupedQueryAttention:
    def forward(self, x, cache=None):
        b, t, _ = x.shape
        nh, nkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.W_query(x).view(b, t, nh, hd).transpose(1, 2)
        k = self.W_key(x).view(b, t, nkv, hd).transpose(1, 2)
        v = self.W_value(x).view(b, t, nkv, hd).transpose(1, 2)
        start = cache.position if cache is not None else 0
        pos = torch.arange(start, start + t)
        q = rope(q, pos)
        k = rope(k, pos)
        if cache is not None:
            k, v = cache(k, v)
            cache.position += t  # move the cache on past the new tokens
        k = k.repeat_interleave(nh // nkv, dim=1)
        v = v.repeat_interleave(nh // nkv, dim=1)
        n = k.shape[2]
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        if self.window is None:
            scores = scores.masked_fill(chunk_causal_mask(t, n), float("-inf"))
        else:
            scores = scores.masked_fill(sliding_window_mask(t, n, self.window), float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.out_proj(out.transpose(1, 2).reshape(b, t, self.d_out))
