# assignment: 06_attention_at_inference
# expect: GroupedQueryAttention=positions_from_zero
class GroupedQueryAttention:
    def forward(self, x, cache=None):
        B, T, _ = x.shape
        H, K, D = self.num_heads, self.num_kv_heads, self.head_dim
        q = self.W_query(x).reshape(B, T, H, D).permute(0, 2, 1, 3)
        k = self.W_key(x).reshape(B, T, K, D).permute(0, 2, 1, 3)
        v = self.W_value(x).reshape(B, T, K, D).permute(0, 2, 1, 3)
        pos = torch.arange(T)
        q = rope(q, pos)
        k = rope(k, pos)
        if cache is not None:
            k, v = cache(k, v)
        k = torch.repeat_interleave(k, H // K, dim=1)
        v = torch.repeat_interleave(v, H // K, dim=1)
        S = k.shape[2]
        att = torch.einsum("bhqd,bhkd->bhqk", q, k) / D**0.5
        W = self.window
        blocked = sliding_window_mask(T, S, W) if W else chunk_causal_mask(T, S)
        att = att.masked_fill(blocked, float("-inf")).softmax(-1)
        out = torch.einsum("bhqk,bhkd->bhqd", att, v)
        return self.out_proj(out.permute(0, 2, 1, 3).reshape(B, T, H * D))
