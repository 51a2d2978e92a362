# assignment: 03_causal_attention
# expect: CausalAttention=inverted_mask
class CausalAttention:
    def forward(self, x):
        t = x.shape[1]
        allowed = torch.logical_not(self.mask[:t, :t])
        out, _ = self.attention(self.W_query(x), self.W_key(x), self.W_value(x), mask=allowed)
        return out
