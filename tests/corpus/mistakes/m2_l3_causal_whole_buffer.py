# assignment: 03_causal_attention
# expect: CausalAttention=mask_not_cut
class CausalAttention:
    def forward(self, x):
        q, k, v = self.W_query(x), self.W_key(x), self.W_value(x)
        out, _ = self.attention(q, k, v, mask=self.mask.bool())
        return out
