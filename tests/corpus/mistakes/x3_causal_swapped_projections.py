# assignment: 03_causal_attention
# expect: CausalAttention=queries_keys_swapped
class CausalAttention:
    def forward(self, x):
        t = x.shape[-2]
        queries, keys = self.W_key(x), self.W_query(x)
        out, _ = self.attention(queries, keys, self.W_value(x), mask=self.mask[:t, :t])
        return out
