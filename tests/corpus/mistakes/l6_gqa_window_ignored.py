# assignment: 06_attention_at_inference
# expect: none
class GroupedQueryAttention:
    def forward(self, x, cache=None):
        b, t, _ = x.shape
        q = self.W_query(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.W_key(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.W_value(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        first = 0 if cache is None else cache.position
        where = torch.arange(first, first + t)
        q, k = rope(q, where), rope(k, where)
        if cache is not None:
            k, v = cache(k, v)
        per_kv = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(per_kv, dim=1)
        v = v.repeat_interleave(per_kv, dim=1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        blocked = chunk_causal_mask(t, k.shape[2])
        scores = torch.where(blocked, torch.full_like(scores, float("-inf")), scores)
        weights = torch.softmax(scores, dim=-1)
        return self.out_proj((weights @ v).transpose(1, 2).reshape(b, t, self.d_out))
