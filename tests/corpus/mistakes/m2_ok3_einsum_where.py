# assignment: 03_causal_attention
# expect: correct
def causal_mask(num_tokens):
    idx = torch.arange(num_tokens)
    return idx.unsqueeze(0) > idx.unsqueeze(1)


class ScaledDotProductAttention:
    def forward(self, q, k, v, mask=None):
        logits = torch.einsum("...qd,...kd->...qk", q, k) / k.shape[-1] ** 0.5
        if mask is not None:
            logits = torch.where(mask, float("-inf"), logits)
        weights = torch.softmax(logits, dim=-1).nan_to_num(0.0)
        weights = self.dropout(weights)
        return torch.einsum("...qk,...kd->...qd", weights, v), weights


class CausalAttention:
    def forward(self, x):
        n = x.size(-2)
        out, _ = self.attention(
            q=self.W_query(x), k=self.W_key(x), v=self.W_value(x), mask=self.mask[:n, :n]
        )
        return out
