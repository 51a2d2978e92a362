# assignment: 06_attention_at_inference
# expect: correct
class GroupedQueryAttention:
    def forward(self, x, cache=None):
        # no repeat at all: the query heads are grouped under their key/value head
        b, t, _ = x.shape
        kv, g, d = self.num_kv_heads, self.num_heads // self.num_kv_heads, self.head_dim
        q = self.W_query(x).unflatten(-1, (kv, g, d)).permute(0, 2, 3, 1, 4)
        k = self.W_key(x).unflatten(-1, (kv, d)).transpose(1, 2)
        v = self.W_value(x).unflatten(-1, (kv, d)).transpose(1, 2)
        p0 = cache.position if cache is not None else 0
        where = torch.arange(p0, p0 + t)
        q, k = rope(q, where), rope(k, where)
        if cache is not None:
            k, v = cache(k, v)
        n = k.shape[-2]
        s = torch.einsum("bkgqd,bknd->bkgqn", q, k) / math.sqrt(d)
        if self.window is None:
            blocked = chunk_causal_mask(t, n)
        else:
            blocked = sliding_window_mask(t, n, self.window)
        p = s.masked_fill(blocked, -math.inf).softmax(dim=-1)
        o = torch.einsum("bkgqn,bknd->bqkgd", p, v).reshape(b, t, self.d_out)
        return self.out_proj(o)
