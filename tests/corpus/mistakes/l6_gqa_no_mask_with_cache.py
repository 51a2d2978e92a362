# assignment: 06_attention_at_inference
# expect: GroupedQueryAttention=mask_skipped_with_cache
class GroupedQueryAttention:
    def forward(self, x, cache=None):
        batch, t, _ = x.shape
        hd = self.head_dim
        queries = self.W_query(x).view(batch, t, -1, hd).transpose(1, 2)
        keys = self.W_key(x).view(batch, t, -1, hd).transpose(1, 2)
        values = self.W_value(x).view(batch, t, -1, hd).transpose(1, 2)
        offset = cache.position if cache is not None else 0
        positions = torch.arange(offset, offset + t)
        queries = rope(queries, positions)
        keys = rope(keys, positions)
        if cache is not None:
            keys, values = cache(keys, values)
        rep = self.num_heads // self.num_kv_heads
        keys = keys.repeat_interleave(rep, dim=1)
        values = values.repeat_interleave(rep, dim=1)
        scores = torch.matmul(queries, keys.transpose(-1, -2)) / math.sqrt(hd)
        if cache is None:
            # with a cache the keys are all in the past already, nothing to hide
            if self.window is None:
                blocked = chunk_causal_mask(t, t)
            else:
                blocked = sliding_window_mask(t, t, self.window)
            scores = scores.masked_fill(blocked, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        merged = torch.matmul(attn, values).transpose(1, 2).reshape(batch, t, self.d_out)
        return self.out_proj(merged)
