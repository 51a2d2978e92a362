# assignment: 03_causal_attention
# expect: CausalAttention=mask_not_cut
class CausalAttention:
    def forward(self, x):
        queries, keys, values = self.W_query(x), self.W_key(x), self.W_value(x)
        out, _weights = self.attention(queries, keys, values, self.mask)
        return out
